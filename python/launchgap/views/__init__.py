"""Ways to show an analysis: the terminal report (terminal.py), diff's tables (diff.py, gpu_diff.py), the
per-core timeline (timeline.py, and html.py for the interactive page), running/waiting (running_waiting.py),
experiment show's tables (experiment.py, experiment_gpu.py), cudasim's ground truth (cudasim_truth.py);
numbers.py and words.py say numbers alike everywhere. Every name from a trace or /proc reaches the terminal
through launchgap/console.py, which the doctor's views use too. Nothing here imports the experiments: their
records are read by attribute."""
