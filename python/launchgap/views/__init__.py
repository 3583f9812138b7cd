"""Ways to show an analysis: the terminal report, and (later) timelines."""
