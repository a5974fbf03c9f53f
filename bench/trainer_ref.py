"""PyTorch reference of bench/trainer.sh: training img/s of the same
architectures as lcl's trainer/torch shim, soft-target CE, SGD Nesterov."""
import argparse, time
import torch
import torch.nn as nn
import torch.nn.functional as F


class CNN(nn.Module):
    def __init__(self, c=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc = nn.Linear(128, c)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(F.relu(self.fc1(x.flatten(1))))


def conv(i, o, k, s):
    return nn.Conv2d(i, o, k, stride=s, padding=k // 2, bias=False)


class Block(nn.Module):
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


class ResNet18(nn.Module):
    def __init__(self, c=10):
        super().__init__()
        self.conv1, self.bn1 = conv(3, 64, 3, 1), nn.BatchNorm2d(64)
        layers, inp = [], 64
        for i, n in enumerate([2, 2, 2, 2]):
            planes = 64 << i
            blocks = []
            for b in range(n):
                blocks.append(Block(inp, planes, 2 if b == 0 and i > 0 else 1))
                inp = planes
            layers.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = nn.Linear(512, c)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def forward_macs(m, shape):
    """Multiply-adds of one image's forward pass through the convolutions and
    linear layers (the rest is a few percent of the work)."""
    total = [0]

    def hook(mod, inp, out):
        if isinstance(mod, nn.Conv2d):
            k = mod.kernel_size[0] * mod.kernel_size[1]
            total[0] += out.numel() * mod.in_channels // mod.groups * k
        elif isinstance(mod, nn.Linear):
            total[0] += out.numel() * mod.in_features

    hooks = [x.register_forward_hook(hook) for x in m.modules()]
    with torch.no_grad():
        m.eval()(torch.zeros(1, *shape))
    for h in hooks:
        h.remove()
    m.train()
    return total[0]


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
        m, shape = CNN(), (1, 28, 28)
    else:
        m, shape = ResNet18(), (3, 32, 32)
    if a.flops:
        print(3 * 2 * forward_macs(m, shape))
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
