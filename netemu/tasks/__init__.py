"""Learning tasks: model, loss, local training and evaluation over a scenario's data
(netemu.tasks.base says what a task is; netemu.tasks.supervised holds the built-in ones)."""

from netemu.tasks.base import Task, TaskSpec, Training, local_steps
from netemu.tasks.supervised import SPECS, ModelTask

__all__ = ["SPECS", "ModelTask", "Task", "TaskSpec", "Training", "local_steps"]
