"""Ways to show an analysis: the terminal report (terminal.py), the per-core timeline (timeline.py, and
html.py for the interactive page), running/waiting (running_waiting.py); console.py makes every name from a
trace or /proc safe to print, numbers.py and words.py say numbers alike everywhere."""
