"""PyTorch eager reference of `lcl bench step` (trainer.MeasureSteps): the
same ResNet (torchvision's architecture and initialisation, CIFAR or
ImageNet stem), batch, precision (autocast) and memory format; each step
copies a pinned uint8 batch to the device without blocking and normalises it
there, then forward, soft-target cross-entropy in float32, backward and
torch.optim.SGD (momentum 0.9, Nesterov, weight decay 5e-5; fp16 with a
fixed loss scale of 65536 and the GradScaler skip rule). Prints one JSON
line: img_per_s, step_ms, loss, peak_allocated, peak_reserved, skipped.

Written by hand (no torchvision) so it runs wherever PyTorch does, 1.13 to 2.x.
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv(i, o, k, s):
    return nn.Conv2d(i, o, k, stride=s, padding=k // 2, bias=False)


class Basic(nn.Module):
    expansion = 1

    def __init__(self, inp, planes, stride):
        super().__init__()
        self.conv1, self.bn1 = conv(inp, planes, 3, stride), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = conv(planes, planes, 3, 1), nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inp != planes:
            self.downsample = nn.Sequential(conv(inp, planes, 1, stride), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (self.downsample(x) if self.downsample is not None else x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inp, planes, stride):
        super().__init__()
        self.conv1, self.bn1 = conv(inp, planes, 1, 1), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = conv(planes, planes, 3, stride), nn.BatchNorm2d(planes)
        self.conv3, self.bn3 = conv(planes, planes * 4, 1, 1), nn.BatchNorm2d(planes * 4)
        self.downsample = None
        if stride != 1 or inp != planes * 4:
            self.downsample = nn.Sequential(conv(inp, planes * 4, 1, stride), nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + (self.downsample(x) if self.downsample is not None else x))


class ResNet(nn.Module):
    def __init__(self, block, layers, classes, cifar):
        super().__init__()
        self.cifar = cifar
        self.conv1 = conv(3, 64, 3, 1) if cifar else conv(3, 64, 7, 2)
        self.bn1 = nn.BatchNorm2d(64)
        inp, stages = 64, []
        for i, n in enumerate(layers):
            planes, blocks = 64 << i, []
            for b in range(n):
                blocks.append(block(inp, planes, 2 if b == 0 and i > 0 else 1))
                inp = planes * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.fc = nn.Linear(inp, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        if not self.cifar:
            x = F.max_pool2d(x, 3, 2, 1)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


ARCH = {"resnet18": (Basic, [2, 2, 2, 2]), "resnet34": (Basic, [3, 4, 6, 3]), "resnet50": (Bottleneck, [3, 4, 6, 3])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--stem", default="cifar", choices=["cifar", "imagenet"])
    ap.add_argument("--size", type=int, default=32)
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
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    torch.backends.cudnn.benchmark = bool(a.cudnn_benchmark)
    torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
    torch.backends.cudnn.allow_tf32 = bool(a.tf32)
    torch.manual_seed(1)
    block, layers = ARCH[a.model]
    m = ResNet(block, layers, a.classes, a.stem == "cifar").to(dev)
    mf = torch.channels_last if a.channels_last else torch.contiguous_format
    m = m.to(memory_format=mf)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-5)
    c = a.classes
    T = torch.full((c, c), 0.1 / (c - 1), device=dev)
    T.fill_diagonal_(0.9)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1)
    scale_, bias_ = 1 / (255 * std), -mean / std
    x8 = torch.randint(0, 256, (a.batch, 3, a.size, a.size), dtype=torch.uint8)
    y = torch.randint(0, c, (a.batch,))
    if cuda:
        x8, y = x8.pin_memory(), y.pin_memory()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
    loss_scale = 65536.0 if a.precision == "fp16" else 0.0
    m.train()
    acc = torch.zeros((), dtype=torch.float64, device=dev)
    skipped = 0

    def step():
        nonlocal acc, skipped
        xd = x8.to(dev, non_blocking=True)
        yd = y.to(dev, non_blocking=True)
        X = (xd.float() * scale_ + bias_).contiguous(memory_format=mf)
        with torch.autocast(dev.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            z = m(X)
        loss = -(T.index_select(0, yd) * F.log_softmax(z.float(), 1)).sum(1).mean()
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
    t = time.perf_counter()
    for _ in range(a.steps):
        step()
    total = acc.item()
    if cuda:
        torch.cuda.synchronize()
    el = time.perf_counter() - t
    out = {"img_per_s": a.batch * a.steps / el, "step_ms": 1000 * el / a.steps, "loss": total / (a.batch * a.steps),
           "peak_allocated": torch.cuda.max_memory_allocated() if cuda else -1,
           "peak_reserved": torch.cuda.max_memory_reserved() if cuda else -1, "skipped": skipped}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
