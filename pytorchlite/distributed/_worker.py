"""The entry point of each rank under pytorchlite.distributed.run: sets torchrun's environment
from Open MPI's (OMPI_COMM_WORLD_*) and runs the training script as __main__.

    python -m pytorchlite.distributed._worker [-m] script_or_module args..."""
import os
import runpy
import sys


def _set_environment():
    env = os.environ
    rank = env.get("OMPI_COMM_WORLD_RANK", env.get("PMI_RANK", "0"))
    size = env.get("OMPI_COMM_WORLD_SIZE", env.get("PMI_SIZE", "1"))
    env["RANK"] = rank
    env["WORLD_SIZE"] = size
    env["LOCAL_RANK"] = env.get("OMPI_COMM_WORLD_LOCAL_RANK", rank)
    env["LOCAL_WORLD_SIZE"] = env.get("OMPI_COMM_WORLD_LOCAL_SIZE", size)
    env["GROUP_RANK"] = env.get("PTL_NODE_RANK", "0")
    env["TORCHELASTIC_RUN_ID"] = "none"


def _write_error(exc_type, exc, tb):
    """Uncaught exceptions before init_process_group: traceback with the rank, and the error
    file for the launcher (init_process_group installs the hook that also aborts MPI)."""
    import traceback
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    rank = os.environ.get("RANK", "?")
    sys.stderr.write("".join(f"[rank {rank}] {line}\n" for line in text.splitlines()))
    error_dir = os.environ.get("PTL_ERROR_FILE_DIR")
    if error_dir:
        with open(os.path.join(error_dir, f"rank{rank}.txt"), "w") as f:
            f.write(text)


def main():
    _set_environment()
    args = sys.argv[1:]
    sys.excepthook = _write_error
    if args and args[0] == "-m":
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
