"""The PyTorch architectures lcl's benchmarks compare against, written once
for bench/step_ref.py and bench/e2e_ref.py: the same
layers, names and initialisation as lcl's built-ins (trainer/models): the
small CNN (conv3x3-BN-ReLU-maxpool stages, fc1, fc) and torchvision's ResNets
with a CIFAR (3x3 conv, no max-pool) or ImageNet (7x7/2 conv, max-pool) stem.

Written by hand (no torchvision) so it runs wherever PyTorch does, 1.13 to
2.x. The scripts run with `python3 -I`, which leaves the script's folder off
sys.path: they add it before importing this module.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class CNN(nn.Module):
    """lcl's `cnn[:channels=AxB,fc=N,bn=0|1]`."""

    def __init__(self, classes=10, in_ch=1, size=28, channels=(32, 64), fc=128, bn=True):
        super().__init__()
        self.n = len(channels)
        c = in_ch
        for i, o in enumerate(channels):
            setattr(self, "conv%d" % (i + 1), nn.Conv2d(c, o, 3, padding=1, bias=not bn))
            setattr(self, "bn%d" % (i + 1), nn.BatchNorm2d(o) if bn else nn.Identity())
            c, size = o, size // 2
        self.fc1 = nn.Linear(c * size * size, fc)
        self.fc = nn.Linear(fc, classes)

    def forward(self, x):
        for i in range(1, self.n + 1):
            x = F.max_pool2d(F.relu(getattr(self, "bn%d" % i)(getattr(self, "conv%d" % i)(x))), 2)
        return self.fc(F.relu(self.fc1(x.flatten(1))))


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
    """torchvision's ResNet (its initialisation too), CIFAR or ImageNet stem."""

    def __init__(self, block, layers, classes, cifar, in_ch=3):
        super().__init__()
        self.cifar = cifar
        self.conv1 = conv(in_ch, 64, 3, 1) if cifar else conv(in_ch, 64, 7, 2)
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


RESNETS = {"resnet18": (Basic, [2, 2, 2, 2]), "resnet34": (Basic, [3, 4, 6, 3]), "resnet50": (Bottleneck, [3, 4, 6, 3])}


def resnet(name, classes=10, cifar=True, in_ch=3):
    block, layers = RESNETS[name]
    return ResNet(block, layers, classes, cifar, in_ch)


class MLP(nn.Module):
    """lcl's `mlp[:hidden=AxB]`: flatten, Linear+ReLU layers fc1.., fc."""

    def __init__(self, classes=10, inputs=784, hidden=(256, 128)):
        super().__init__()
        dims = (inputs,) + tuple(hidden)
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.fc = nn.Linear(dims[-1], classes)

    def forward(self, x):
        x = torch.flatten(x, 1)
        for layer in self.hidden:
            x = F.relu(layer(x))
        return self.fc(x)


def build(spec, classes, shape):
    """The module for an lcl model spec NAME[:key=value,...] on inputs of
    shape (C, H, W): cnn[:channels=AxB,fc=N,bn=0|1], mlp[:hidden=AxB],
    resnet18/34/50[:stem=cifar|imagenet]."""
    name, _, opts = spec.partition(":")
    kv = dict(o.split("=", 1) for o in opts.split(",") if o)
    c, h, _ = shape
    if name == "cnn":
        ch = tuple(int(v) for v in kv.get("channels", "32x64").split("x"))
        return CNN(classes, c, h, ch, int(kv.get("fc", 128)), kv.get("bn", "1") == "1")
    if name == "mlp":
        hidden = tuple(int(v) for v in kv.get("hidden", "256x128").split("x"))
        return MLP(classes, c * h * shape[2], hidden)
    if name in RESNETS:
        return resnet(name, classes, kv.get("stem", "cifar") == "cifar", c)
    raise SystemExit("refnets: unknown model %s (cnn, mlp, %s)" % (spec, ", ".join(RESNETS)))


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
    was = m.training
    with torch.no_grad():
        m.eval()(torch.zeros(1, *shape))
    for h in hooks:
        h.remove()
    m.train(was)
    return total[0]
