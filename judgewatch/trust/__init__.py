"""Judge trust: measure every judge on known answers (and human labels) before a gate may rest on it.

Modules: `validate` (validation runs), `figures` (AUROC, gap, unscored rate), `pairwise` and `pairwise_judges`
(A vs B in both orders), `policy` (TrustPolicy -> TrustVerdict), `records` (stored records, `trust_for`),
`leaderboard` (every judge measured), `runs` (judges x rubrics x sets, the demo step), bias probes:
`probe_items` (answers changed in one way that must not matter), `probes` (judged and measured), `probe_policy`
(limits per probe). Import from them directly.
"""
