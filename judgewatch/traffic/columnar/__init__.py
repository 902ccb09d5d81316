"""The columnar fast path of traffic sampling: a source read in Arrow blocks (`blocks`; JSONL through `line_blocks`
and `line_scan`), the rule's inputs read as whole columns (`columns`, `times`) and only the picks mapped into rows
(`sampling`). The rule is the row path's (`traffic/sampling`: its filters, window, strata and `decide`; the
mapping's `RowMapper` for every pick); tests hold both paths to the same picks, counts and quarantine
(tests/judgewatch/traffic/test_columnar_sampling.py)."""
