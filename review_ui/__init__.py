"""The Gradio review app: the human-review queue and the model owners' views."""
