"""Placeholder: the Gradio chat page is being built (issue 7)."""
