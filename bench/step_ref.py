"""PyTorch eager reference of `lcl bench step` (trainer.MeasureSteps), lcl's
one step benchmark: the same small CNN or ResNet (torchvision's architecture
and initialisation, CIFAR or ImageNet stem), batch, precision (autocast) and
memory format; each step copies a pinned uint8 batch to the device without
blocking and normalises it there, then forward, soft-target cross-entropy in
float32, backward and torch.optim.SGD (momentum 0.9, Nesterov, weight decay
5e-4; fp16 with a fixed loss scale of 65536 and the GradScaler skip rule).
Prints one JSON line: img_per_s, img_per_cpu_s (per CPU second of the
process, all threads), step_ms, loss, peak_allocated, peak_reserved,
skipped. --flops prints the model's training FLOPs per image instead.
--mixup/--cutmix mix every step's batch as timm's Mixup does in its "batch"
mode (one λ per batch, the batch mixed with itself flipped in place, the
targets' rows mixed with the same λ; both: CutMix half of the time).
--mix-compare times --steps mixed and --steps unmixed steps in alternating
blocks of 10 (as `lcl bench step --mix-compare`) and adds unmixed_img_per_s,
unmixed_img_per_cpu_s and mix_cost_pct.

The architectures are bench/refnets.py's.
"""
import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refnets  # noqa: E402 (after the path: python3 -I leaves this folder off it)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--stem", default="cifar", choices=["cifar", "imagenet"])
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--channels", type=int, default=3, help="input channels (cnn: 1, Fashion-MNIST's)")
    ap.add_argument("--flops", action="store_true", help="print the training FLOPs per image and exit")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--tf32", type=int, default=1)
    ap.add_argument("--cudnn-benchmark", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--mixup", type=float, default=0, help="mixup's alpha (0: off)")
    ap.add_argument("--cutmix", type=float, default=0, help="CutMix's alpha (0: off)")
    ap.add_argument("--mix-compare", action="store_true", help="time mixed and unmixed steps in turns")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    torch.backends.cudnn.benchmark = bool(a.cudnn_benchmark)
    torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
    torch.backends.cudnn.allow_tf32 = bool(a.tf32)
    torch.manual_seed(1)
    if a.model == "cnn":
        m = refnets.CNN(a.classes, a.channels, a.size)
    else:
        m = refnets.resnet(a.model, a.classes, a.stem == "cifar")
    if a.flops:
        # forward multiply-adds × 2 (FLOPs) × 3 (forward, backward for
        # inputs, backward for weights), as a direct convolution computes them
        print(3 * 2 * refnets.forward_macs(m, (a.channels, a.size, a.size)))
        return
    m = m.to(dev)
    mf = torch.channels_last if a.channels_last else torch.contiguous_format
    m = m.to(memory_format=mf)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    c = a.classes
    T = torch.full((c, c), 0.1 / (c - 1), device=dev)
    T.fill_diagonal_(0.9)
    # ImageNet's mean and deviation for 3 channels, else 0.5 and 0.25 (as lcl)
    mean = torch.tensor([0.485, 0.456, 0.406] if a.channels == 3 else [0.5] * a.channels, device=dev).view(1, -1, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225] if a.channels == 3 else [0.25] * a.channels, device=dev).view(1, -1, 1, 1)
    scale_, bias_ = 1 / (255 * std), -mean / std
    x8 = torch.randint(0, 256, (a.batch, a.channels, a.size, a.size), dtype=torch.uint8)
    y = torch.randint(0, c, (a.batch,))
    if cuda:
        x8, y = x8.pin_memory(), y.pin_memory()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
    loss_scale = 65536.0 if a.precision == "fp16" else 0.0
    m.train()
    acc = torch.zeros((), dtype=torch.float64, device=dev)
    skipped = 0

    rng = random.Random(1)

    def mix(X, yd):
        # timm's Mixup._params_per_batch, _mix_batch and mixup_target
        cut = a.cutmix > 0 and (a.mixup <= 0 or rng.random() < 0.5)
        alpha = a.cutmix if cut else a.mixup
        lam = rng.betavariate(alpha, alpha)
        if cut:
            h, w = X.shape[-2:]
            r = math.sqrt(1 - lam)
            ch, cw = int(h * r), int(w * r)
            cy, cx = rng.randrange(h), rng.randrange(w)
            y0, y1 = max(cy - ch // 2, 0), min(cy + ch // 2, h)
            x0, x1 = max(cx - cw // 2, 0), min(cx + cw // 2, w)
            lam = 1 - (y1 - y0) * (x1 - x0) / (h * w)
            X[:, :, y0:y1, x0:x1] = X.flip(0)[:, :, y0:y1, x0:x1]
        else:
            X.mul_(lam).add_(X.flip(0).mul_(1 - lam))
        return X, T.index_select(0, yd) * lam + T.index_select(0, yd.flip(0)) * (1 - lam)

    mixing = a.mixup > 0 or a.cutmix > 0
    if a.mix_compare and not mixing:
        sys.exit("step_ref.py: --mix-compare needs --mixup or --cutmix")

    def step(mixed=mixing):
        nonlocal acc, skipped
        xd = x8.to(dev, non_blocking=True)
        yd = y.to(dev, non_blocking=True)
        X = (xd.float() * scale_ + bias_).contiguous(memory_format=mf)
        if mixed:
            X, Ty = mix(X, yd)
        else:
            Ty = T.index_select(0, yd)
        with torch.autocast(dev.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            z = m(X)
        loss = -(Ty * F.log_softmax(z.float(), 1)).sum(1).mean()
        opt.zero_grad(set_to_none=True)
        (loss * loss_scale if loss_scale else loss).backward()
        if loss_scale:
            grads = [p.grad for p in m.parameters() if p.grad is not None]
            for g in grads:
                g.mul_(1 / loss_scale)
            if not torch.stack([g.isfinite().all() for g in grads]).all().item():
                skipped += 1
                return
        opt.step()
        acc = acc + loss.detach().double() * a.batch

    for _ in range(a.warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    acc = torch.zeros((), dtype=torch.float64, device=dev)
    skipped = 0

    def timed(n, mixed):
        # Seconds (wall, CPU) of n steps, waited for as MeasureSteps waits.
        t, c = time.perf_counter(), time.process_time()
        for _ in range(n):
            step(mixed)
        acc.item()
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t, time.process_time() - c

    plain = None
    if a.mix_compare:
        # Blocks of 10 mixed and unmixed steps, the order turned every pair.
        el = cpu = pel = pcpu = 0.0
        done, i = 0, 0
        while done < a.steps:
            n = min(10, a.steps - done)
            for mixed in ((True, False) if i % 2 == 0 else (False, True)):
                w, c = timed(n, mixed)
                if mixed:
                    el, cpu = el + w, cpu + c
                else:
                    pel, pcpu = pel + w, pcpu + c
            done, i = done + n, i + 1
        plain = (pel, pcpu)
    else:
        el, cpu = timed(a.steps, mixing)
    total = acc.item()
    trained = a.steps * (2 if plain else 1)
    out = {"img_per_s": a.batch * a.steps / el, "img_per_cpu_s": a.batch * a.steps / cpu, "step_ms": 1000 * el / a.steps, "loss": total / (a.batch * trained),
           "peak_allocated": torch.cuda.max_memory_allocated() if cuda else -1,
           "peak_reserved": torch.cuda.max_memory_reserved() if cuda else -1, "skipped": skipped}
    if plain:
        out["unmixed_img_per_s"] = a.batch * a.steps / plain[0]
        out["unmixed_img_per_cpu_s"] = a.batch * a.steps / plain[1]
        out["mix_cost_pct"] = 100 * (out["unmixed_img_per_s"] / out["img_per_s"] - 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
