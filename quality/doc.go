// Package quality scores what a serving configuration answers, so that a study can refuse
// configurations that are faster but answer worse.
//
// It reads evaluation sets (JSONL, one item a line: LoadSet), generates each item's answer
// deterministically through a Generator (an OpenAI-compatible server, or the simulator's
// answer model), scores the answers with one of the scorers on a 0..1 scale (exact, contains,
// regex, json_valid, chrf, rouge_l, baseline_agreement, judge), and gates a score against the
// baseline configuration's score and an absolute minimum (Gate).
//
// chrF follows sacrebleu's default CHRF exactly (character n-grams of orders 1 to 6,
// whitespace removed, beta 2, effective-order averaging, statistics summed over the corpus).
// ROUGE-L is the LCS-based F-measure of Lin (2004) with balanced precision and recall, on
// whitespace tokens, with each CJK character a token of its own.
//
// The package leaves to others: starting and stopping engines (launcher), deciding which
// configuration is the baseline and storing scores in a trial (search), decoding plans
// (plan), and the simulator's answer model itself (sim, AnswerModel).
package quality
