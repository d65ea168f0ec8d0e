"""The modules of pytorchlite.utils.benchmark (torch/utils/benchmark/utils/): common
(TaskSpec, Measurement, formatting helpers), timer (Timer) and compare (Compare)."""
