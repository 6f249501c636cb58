#!/usr/bin/python3
"""The training stand-in of test_launch*.py, run by muster's agents (bare,
under torchrun, or as a launcher stand-in).

  launch_prog.py env TAG           write this process's environment
  launch_prog.py allreduce TAG     gloo all-reduce of rank+1; write world, rank,
                                   the sum and the environment
  launch_prog.py ckpt TAG STEPS    STEPS all-reduce steps, resumed from
                                   $OUT/TAG.ckpt (rank 0 writes it after each
                                   step): the world size of every step
  launch_prog.py argv NAME         (as `deepspeed`/`accelerate` on PATH) record
                                   argv and the hostfile, then exit 0

Files go to $OUT, named TAG.<node rank>.<local rank or RANK>.json."""
import json
import os
import sys
import time


def out(name, obj):
    path = os.path.join(os.environ["OUT"], name)
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.rename(path + ".tmp", path)


def who():
    rank = os.environ.get("RANK", "x")
    return "%s.%s" % (os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "x")), rank)


def init():
    import torch.distributed as dist
    dist.init_process_group("gloo")
    return dist


def main():
    mode, tag = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    if mode == "env":
        out("%s.%s.json" % (tag, who()), {"env": env})
        return 0
    if mode == "argv":
        hf = ""
        for a in sys.argv[3:]:
            if a.startswith("--hostfile="):
                hf = open(a.split("=", 1)[1]).read()
        out("%s.%s.json" % (tag, os.environ.get("NODE_RANK", "x")),
            {"argv": sys.argv[3:], "hostfile": hf, "env": env})
        return 0
    import torch
    dist = init()
    world, rank = dist.get_world_size(), dist.get_rank()
    if mode == "allreduce":
        t = torch.tensor([float(rank + 1)])
        dist.all_reduce(t)
        out("%s.%s.json" % (tag, who()), {"world": world, "rank": rank, "sum": t.item(), "env": env})
        dist.destroy_process_group()
        return 0
    if mode == "ckpt":
        steps = int(sys.argv[3])
        ck = os.path.join(os.environ["OUT"], tag + ".ckpt")
        state = json.load(open(ck)) if os.path.exists(ck) else {"worlds": [], "acc": 0}
        while len(state["worlds"]) < steps:
            t = torch.tensor([1.0])
            dist.all_reduce(t)  # every rank adds 1: the world size
            state["worlds"].append(int(t.item()))
            state["acc"] += int(t.item())
            if rank == 0:
                out(tag + ".ckpt", state)
            time.sleep(0.4)
        dist.barrier()
        if rank == 0:
            out(tag + ".done.json", {"world": world, "state": state, "env": env})
        dist.destroy_process_group()
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
