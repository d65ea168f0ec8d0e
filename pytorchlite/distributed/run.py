"""python -m pytorchlite.distributed.run: torchrun's command line on top of mpirun.  Mirrors
torch/distributed/run.py.

    python -m pytorchlite.distributed.run --nproc-per-node 4 train.py --epochs 3

starts `mpirun -np 4` over pytorchlite.distributed._worker, which gives each process torchrun's
environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
MASTER_PORT) and runs the script as __main__.  A worker that raises prints its traceback with
its rank and aborts the MPI job (the others stop too, whatever they wait in); the launcher then
exits with a non-zero code and repeats each failed rank's traceback.  Several machines are one
MPI job: pass mpirun's --hostfile (the torchrun flags --nnodes/--node-rank, which start one
launcher per machine, are accepted for a single node only)."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def get_args_parser():
    p = argparse.ArgumentParser(prog="python -m pytorchlite.distributed.run",
                                description="Starts one process per rank with mpirun.")
    p.add_argument("--nnodes", default="1", help="number of nodes (1; use --hostfile for more)")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="processes per node")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true", help="accepted for torchrun's sake")
    p.add_argument("--hostfile", default=None, help="mpirun's --hostfile, for several nodes")
    p.add_argument("--mpirun", default="mpirun", help="the mpirun to use")
    p.add_argument("-m", "--module", action="store_true",
                   help="run training_script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true",
                   help="run training_script as an executable, not with python (it gets "
                   "MPI's OMPI_COMM_WORLD_* variables, not torchrun's)")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _nproc(value):
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    return int(value)


def mpirun_command(args, error_dir):
    """The mpirun command line for the parsed arguments, and its environment."""
    if args.nnodes not in ("1", "1:1") or args.node_rank != 0:
        raise ValueError("pytorchlite.distributed.run starts one MPI job for all nodes: run it "
                         "once with --hostfile (mpirun's) instead of --nnodes/--node-rank")
    nproc = _nproc(args.nproc_per_node)
    mpirun = shutil.which(args.mpirun)
    if mpirun is None:
        raise FileNotFoundError(f"{args.mpirun} not found: install Open MPI (apt-get install "
                                "openmpi-bin libopenmpi-dev)")
    cmd = [mpirun, "-np", str(nproc)]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")   # Open MPI refuses root unless told (containers)
    if nproc > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")       # more ranks than cores: allowed, just slower
    if args.hostfile:
        cmd += ["--hostfile", args.hostfile]
    env = dict(os.environ, MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.master_port),
               PTL_ERROR_FILE_DIR=error_dir, PTL_NODE_RANK="0")
    for name in ("MASTER_ADDR", "MASTER_PORT", "PTL_ERROR_FILE_DIR", "PTL_NODE_RANK",
                 "PYTHONPATH", "PTL_DISTRIBUTED_DEBUG", "PTL_DISTRIBUTED_STALL_SECONDS"):
        if name in env:
            cmd += ["-x", name]
    worker = [sys.executable, "-m", "pytorchlite.distributed._worker"]
    if args.module:
        worker.append("-m")
    elif args.no_python:
        worker = []
    return cmd + worker + [args.training_script] + list(args.training_script_args), env


def _report(returncode, error_dir):
    """The launcher's summary of a failed job: each failed rank and its traceback."""
    files = sorted(f for f in os.listdir(error_dir) if f.startswith("rank"))
    lines = [f"pytorchlite.distributed.run: the job failed (exit code {returncode})"]
    if not files:
        lines.append("  no worker left a traceback: a worker was killed by a signal or exited "
                     "with a non-zero code before starting; see mpirun's message above")
    for name in files:
        rank = name[len("rank"):-len(".txt")]
        with open(os.path.join(error_dir, name)) as f:
            lines.append(f"  rank {rank} (local_rank {rank}) failed:")
            lines.extend("    " + line for line in f.read().splitlines())
    print("\n".join(lines), file=sys.stderr, flush=True)


def run(args):
    """Runs the job; returns mpirun's exit code."""
    with tempfile.TemporaryDirectory(prefix="ptl_errors_") as error_dir:
        cmd, env = mpirun_command(args, error_dir)
        proc = subprocess.run(cmd, env=env)
        if proc.returncode != 0:
            _report(proc.returncode, error_dir)
        return proc.returncode


def main(argv=None):
    args = get_args_parser().parse_args(argv)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
