"""PyTorch reference of bench/trainer.sh: training img/s of the same
architectures as lcl's trainer/torch shim, soft-target CE, SGD Nesterov."""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refnets  # noqa: E402 (after the path: python3 -I leaves this folder off it)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--channels-last", action="store_true", help="model and input in torch.channels_last")
    ap.add_argument("--flops", action="store_true", help="print the training FLOPs per image and exit")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.model == "cnn":
        m, shape = refnets.CNN(), (1, 28, 28)
    else:
        m, shape = refnets.resnet("resnet18"), (3, 32, 32)
    if a.flops:
        print(3 * 2 * refnets.forward_macs(m, shape))
        return
    c = 10
    T = torch.full((c, c), 0.1 / (c - 1))
    T.fill_diagonal_(0.9)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    x = torch.randn(a.batch, *shape)
    y = torch.randint(0, c, (a.batch,))
    if a.channels_last:
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    m.train()

    def step():
        logp = F.log_softmax(m(x), 1)
        loss = -(T.index_select(0, y) * logp).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step()
    t, c = time.perf_counter(), time.process_time()
    for _ in range(a.steps):
        step()
    n = a.batch * a.steps
    # images per wall-clock second and per CPU second of the process
    print("%.2f %.2f" % (n / (time.perf_counter() - t), n / (time.process_time() - c)))


if __name__ == "__main__":
    main()
