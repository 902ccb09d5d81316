"""Calibration and tier comparison on stored verdicts and human labels (issue 6).

- `dataset`: the scores frame (judge score per verdict and criterion, the human label where one exists)
- `tiers`: per tier raw mean, PPI-corrected mean and interval, tier difference (paired or unpaired), trends
- `agreement`: judge-human agreement per tier, confusion matrices, reviewer agreement
- `drift`: windows, the stated drift test, stored alerts, the webhook
- `anchors`: the frozen anchor set, re-judged once per judge configuration, compared with the previous one
- `summary`: everything the Tiers report and pages show, computed once; `plots`: their PNG pictures
- `demo`, `synthetic`: labels that are NOT human (golden known answers; seeded synthetic data), always marked"""
