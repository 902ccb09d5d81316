"""The columnar fast path of traffic sampling: a source read in Arrow blocks (`blocks`; JSONL through `line_blocks`
and `line_scan`), the rule decided on whole columns (`columns`, `times`, `unit_hashes`) and only the picks mapped
into rows (`sampling`). The rule itself is the row path's (`traffic/sampling.Sampler`); tests hold both paths to
the same picks, counts and quarantine (tests/judgewatch/traffic/test_columnar_sampling.py)."""
