"""The columnar fast path of traffic sampling: the rule's inputs read as whole columns, only the picks mapped into
rows. The rule is the row path's (`traffic/sampling`); test_columnar_sampling.py holds both to the same picks."""
