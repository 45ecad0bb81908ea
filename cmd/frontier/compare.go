package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/frontier-llm/frontier/record"

	"github.com/frontier-llm/frontier/report"
)

func cmdCompare(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier compare", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	format := fs.String("format", "table", "output `FORMAT`: table, json or markdown")
	out := fs.String("o", "", "write to `FILE` instead of standard output")
	var pf planFlags
	pf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier compare STUDY... [--format table|json|markdown] [-o FILE]")
		fmt.Fprintln(fs.Output(), "\nPuts studies side by side: each GPU's best throughput, cost and capacity at the SLO,")
		fmt.Fprintln(fs.Output(), "and how the recommended configuration and its numbers changed. A STUDY is a plan, a study")
		fmt.Fprintln(fs.Output(), "database URL or path, optionally followed by #NAME to pick a study, or a .json study record.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	var write func(io.Writer, *report.Comparison) error
	switch *format {
	case "table", "text":
		write = report.WriteCompareText
	case "markdown", "md":
		write = report.WriteCompareMarkdown
	case "json":
		write = report.WriteCompareJSON
	default:
		return invalidf("unknown --format %q: use table, json or markdown", *format)
	}
	if len(pos) == 0 {
		fs.Usage()
		return silent(exitInvalid)
	}
	recs := make([]*record.Study, 0, len(pos))
	for _, arg := range pos {
		source, study := arg, ""
		if i := strings.LastIndex(arg, "#"); i >= 0 {
			source, study = arg[:i], arg[i+1:]
		}
		var rec *record.Study
		var err error
		if strings.HasSuffix(source, ".hcl") {
			sf := studyFlags{study: study, plan: pf}
			rec, err = sf.load(ctx, c, []string{source})
		} else {
			rec, err = loadStudy(ctx, source, study)
		}
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	cmp := report.Compare(pos, recs)
	return writeOutput(c, *out, func(w io.Writer) error { return write(w, cmp) })
}
