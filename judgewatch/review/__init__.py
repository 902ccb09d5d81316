"""Human review: reviewer accounts, routing verdicts to people, the leased queue, adjudication and replay.

The service layer here is the only place that decides who may do what: the Gradio app and the replay
command both call it, and it checks the caller's account and lease on every call."""
