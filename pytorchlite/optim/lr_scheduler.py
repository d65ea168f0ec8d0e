"""Learning-rate schedulers (torch/optim/lr_scheduler.py)."""
