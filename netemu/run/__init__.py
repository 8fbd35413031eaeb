"""Running a scenario: the runner, run folders, outcomes, signals, executors and sweeps."""
