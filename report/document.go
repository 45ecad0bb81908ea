package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// section is one part of a human report: a title, paragraphs, tables and notes after them.
// The text, Markdown and HTML renderers all draw the same sections.
type section struct {
	Title  string
	ID     string // anchor in HTML
	Lines  []string
	Tables []table
	Notes  []string
	// Code is a command line to show as code.
	Code string
	// Plots are drawn by the HTML renderer only.
	Plots []*plot
}

// table is a header and rows of cells.
type table struct {
	Caption string
	Header  []string
	Rows    [][]string
}

// newTable returns a tablewriter table that keeps cells as they are: no upper-casing of
// headers, no wrapping.
func newTable(w io.Writer, markdown bool) *tablewriter.Table {
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithTrimSpace(tw.Off),
	}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	}
	return tablewriter.NewTable(w, opts...)
}

func renderTable(w io.Writer, t table, markdown bool) error {
	tb := newTable(w, markdown)
	header := make([]any, len(t.Header))
	for i, h := range t.Header {
		header[i] = cell(h, markdown)
	}
	tb.Header(header...)
	for _, r := range t.Rows {
		row := make([]string, len(r))
		for i, c := range r {
			row[i] = cell(c, markdown)
		}
		if err := tb.Append(row); err != nil {
			return fmt.Errorf("table row: %w", err)
		}
	}
	if err := tb.Render(); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	return nil
}

// cell makes a cell safe for its format: one line, and in Markdown no character that would
// end the cell or start markup.
func cell(s string, markdown bool) string {
	s = strings.Join(strings.Fields(s), " ")
	if markdown {
		s = mdEscape(s)
	}
	return s
}

// mdEscape escapes the characters that Markdown (GitHub's flavour) would read as markup, and
// the angle brackets that would pass HTML through.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '|', '#', '~':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writeText renders sections for a terminal.
func writeText(w io.Writer, title string, secs []section) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, title)
	fmt.Fprintln(bw, strings.Repeat("=", len([]rune(title))))
	for _, s := range secs {
		fmt.Fprintln(bw)
		if s.Title != "" {
			fmt.Fprintln(bw, s.Title)
			fmt.Fprintln(bw, strings.Repeat("-", len([]rune(s.Title))))
		}
		for _, l := range s.Lines {
			fmt.Fprintln(bw, l)
		}
		if s.Code != "" {
			fmt.Fprintln(bw)
			fmt.Fprintln(bw, "  "+s.Code)
		}
		for _, t := range s.Tables {
			if t.Caption != "" {
				fmt.Fprintln(bw, t.Caption)
			}
			if err := renderTable(bw, t, false); err != nil {
				return err
			}
		}
		for _, n := range s.Notes {
			fmt.Fprintln(bw, n)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// writeMarkdown renders sections as GitHub-flavoured Markdown.
func writeMarkdown(w io.Writer, title string, secs []section) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %s\n", mdEscape(title))
	for _, s := range secs {
		fmt.Fprintln(bw)
		if s.Title != "" {
			fmt.Fprintf(bw, "## %s\n\n", mdEscape(s.Title))
		}
		for _, l := range s.Lines {
			fmt.Fprintf(bw, "%s  \n", mdEscape(l))
		}
		if s.Code != "" {
			fence := "```"
			for strings.Contains(s.Code, fence) {
				fence += "`"
			}
			fmt.Fprintf(bw, "\n%sshell\n%s\n%s\n", fence, s.Code, fence)
		}
		for _, t := range s.Tables {
			fmt.Fprintln(bw)
			if t.Caption != "" {
				fmt.Fprintf(bw, "%s\n\n", mdEscape(t.Caption))
			}
			if err := renderTable(bw, t, true); err != nil {
				return err
			}
		}
		if len(s.Notes) > 0 {
			fmt.Fprintln(bw)
		}
		for _, n := range s.Notes {
			fmt.Fprintf(bw, "%s  \n", mdEscape(n))
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
