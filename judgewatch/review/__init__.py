"""Human review: accounts, routing verdicts to people, the leased queue, adjudication and replay; the only place
that decides who may do what (the app and the replay command both call it, on every call)."""
