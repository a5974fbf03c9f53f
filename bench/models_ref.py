"""PyTorch reference modules of the architectures torchvision does not ship,
written from their papers with the parameter names lcl uses (timm's for
SENet-154 and Inception-ResNet-v2, torchvision's DenseNet names for the
CIFAR DenseNet-BC, lcl's own for the Wide ResNet). The tests load lcl's
weights into them with strict=True and compare logits; bench/models.sh
times them next to lcl. torchvision covers ResNet, ResNeXt and the ImageNet
DenseNets (reference() below)."""
import json
import struct
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv(i, o, k, s=1, p=None, groups=1, bias=False):
    return nn.Conv2d(i, o, k, stride=s, padding=k // 2 if p is None else p, groups=groups, bias=bias)


# Wide ResNet (Zagoruyko & Komodakis 2016): pre-activation basic blocks,
# dropout between the two 3x3 convolutions, the projection applied to the
# pre-activated input.
class WideBlock(nn.Module):
    def __init__(self, i, o, stride, drop):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(i), conv(i, o, 3, stride)
        self.bn2, self.conv2 = nn.BatchNorm2d(o), conv(o, o, 3)
        self.drop = drop
        self.shortcut = nn.Sequential(conv(i, o, 1, stride)) if stride != 1 or i != o else None

    def forward(self, x):
        o = F.relu(self.bn1(x))
        y = F.relu(self.bn2(self.conv1(o)))
        y = self.conv2(F.dropout(y, self.drop, self.training))
        return y + (self.shortcut(o) if self.shortcut is not None else x)


class WRN(nn.Module):
    def __init__(self, depth=28, widen=10, classes=100, drop=0.0):
        super().__init__()
        n = (depth - 4) // 6
        self.conv1 = conv(3, 16, 3)
        c = 16
        for i, w in enumerate([16 * widen, 32 * widen, 64 * widen]):
            blocks = []
            for b in range(n):
                blocks.append(WideBlock(c, w, 2 if b == 0 and i > 0 else 1, drop))
                c = w
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*blocks))
        self.bn = nn.BatchNorm2d(c)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.conv1(x))))
        return self.fc(F.adaptive_avg_pool2d(F.relu(self.bn(x)), 1).flatten(1))


# SENet-154 (Hu et al. 2018, Table 1 and its appendix): a 3x3-conv stem of
# 64, 64, 128 channels, SE-ResNeXt bottlenecks (1x1 to 2p, grouped 3x3 to
# 4p, 1x1 to 4p, a squeeze-excitation gate with reduction r on the
# residual branch), 3x3 stride-2 projections after the first stage,
# dropout 0.2 before the classifier. timm's legacy_senet154 names.
class SqueezeExcite(nn.Module):
    def __init__(self, c, r):
        super().__init__()
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * torch.sigmoid(self.fc2(F.relu(self.fc1(s))))


class SEBottleneck(nn.Module):
    def __init__(self, i, p, groups, r, stride, down):
        super().__init__()
        self.conv1, self.bn1 = conv(i, 2 * p, 1), nn.BatchNorm2d(2 * p)
        self.conv2, self.bn2 = conv(2 * p, 4 * p, 3, stride, groups=groups), nn.BatchNorm2d(4 * p)
        self.conv3, self.bn3 = conv(4 * p, 4 * p, 1), nn.BatchNorm2d(4 * p)
        self.se_module = SqueezeExcite(4 * p, r)
        self.downsample = down

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.se_module(self.bn3(self.conv3(y)))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class SENet154(nn.Module):
    def __init__(self, layers=(3, 8, 36, 3), groups=64, reduction=16, drop=0.2, classes=1000):
        super().__init__()
        self.layer0 = nn.Sequential(OrderedDict([
            ("conv1", conv(3, 64, 3, 2)), ("bn1", nn.BatchNorm2d(64)), ("relu1", nn.ReLU()),
            ("conv2", conv(64, 64, 3)), ("bn2", nn.BatchNorm2d(64)), ("relu2", nn.ReLU()),
            ("conv3", conv(64, 128, 3)), ("bn3", nn.BatchNorm2d(128)), ("relu3", nn.ReLU())]))
        self.pool0 = nn.MaxPool2d(3, 2, ceil_mode=True)
        c = 128
        for i, n in enumerate(layers):
            p = 64 << i
            blocks = []
            for b in range(n):
                stride = 2 if b == 0 and i > 0 else 1
                down = None
                if stride != 1 or c != 4 * p:
                    k = 3 if i > 0 else 1
                    down = nn.Sequential(conv(c, 4 * p, k, stride), nn.BatchNorm2d(4 * p))
                blocks.append(SEBottleneck(c, p, groups, reduction, stride, down))
                c = 4 * p
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*blocks))
        self.drop = drop
        self.last_linear = nn.Linear(c, classes)

    def forward(self, x):
        x = self.pool0(self.layer0(x))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = F.dropout(F.adaptive_avg_pool2d(x, 1).flatten(1), self.drop, self.training)
        return self.last_linear(x)


# Inception-ResNet-v2 (Szegedy et al. 2017, Figures 3, 7, 9-12, 15-16 with
# the TF-Slim filter counts): conv-BN(eps 1e-3)-ReLU units, residual
# branches scaled by 0.17, 0.10 and 0.20, a final block without ReLU,
# dropout (keep 0.8) before the classifier. timm's inception_resnet_v2 names.
class Unit(nn.Module):
    def __init__(self, i, o, k, s=1, p=0):
        super().__init__()
        self.conv = nn.Conv2d(i, o, k, stride=s, padding=p, bias=False)
        self.bn = nn.BatchNorm2d(o, eps=1e-3)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Residual(nn.Module):
    """out = act(scale * conv2d(cat(branches)) + x)."""

    def __init__(self, scale, c, cat, relu, branches):
        super().__init__()
        for name, b in branches:
            setattr(self, name, b)
        self.names = [n for n, _ in branches]
        self.conv2d = nn.Conv2d(cat, c, 1)
        self.scale, self.relu = scale, relu

    def forward(self, x):
        y = self.conv2d(torch.cat([getattr(self, n)(x) for n in self.names], 1)) * self.scale + x
        return F.relu(y) if self.relu else y


def block35():
    return Residual(0.17, 320, 128, True, [
        ("branch0", Unit(320, 32, 1)),
        ("branch1", nn.Sequential(Unit(320, 32, 1), Unit(32, 32, 3, p=1))),
        ("branch2", nn.Sequential(Unit(320, 32, 1), Unit(32, 48, 3, p=1), Unit(48, 64, 3, p=1)))])


def block17():
    return Residual(0.10, 1088, 384, True, [
        ("branch0", Unit(1088, 192, 1)),
        ("branch1", nn.Sequential(Unit(1088, 128, 1), Unit(128, 160, (1, 7), p=(0, 3)), Unit(160, 192, (7, 1), p=(3, 0))))])


def block8(scale=0.20, relu=True):
    return Residual(scale, 2080, 448, relu, [
        ("branch0", Unit(2080, 192, 1)),
        ("branch1", nn.Sequential(Unit(2080, 192, 1), Unit(192, 224, (1, 3), p=(0, 1)), Unit(224, 256, (3, 1), p=(1, 0))))])


class Concat(nn.Module):
    def __init__(self, branches):
        super().__init__()
        for name, b in branches:
            setattr(self, name, b)
        self.names = [n for n, _ in branches]

    def forward(self, x):
        return torch.cat([getattr(self, n)(x) for n in self.names], 1)


class InceptionResNetV2(nn.Module):
    def __init__(self, repeats=(10, 20, 9), drop=0.2, classes=1000):
        super().__init__()
        self.conv2d_1a = Unit(3, 32, 3, 2)
        self.conv2d_2a = Unit(32, 32, 3)
        self.conv2d_2b = Unit(32, 64, 3, p=1)
        self.conv2d_3b = Unit(64, 80, 1)
        self.conv2d_4a = Unit(80, 192, 3)
        self.mixed_5b = Concat([
            ("branch0", Unit(192, 96, 1)),
            ("branch1", nn.Sequential(Unit(192, 48, 1), Unit(48, 64, 5, p=2))),
            ("branch2", nn.Sequential(Unit(192, 64, 1), Unit(64, 96, 3, p=1), Unit(96, 96, 3, p=1))),
            ("branch3", nn.Sequential(nn.AvgPool2d(3, 1, 1, count_include_pad=False), Unit(192, 64, 1)))])
        self.repeat = nn.Sequential(*[block35() for _ in range(repeats[0])])
        self.mixed_6a = Concat([
            ("branch0", Unit(320, 384, 3, 2)),
            ("branch1", nn.Sequential(Unit(320, 256, 1), Unit(256, 256, 3, p=1), Unit(256, 384, 3, 2))),
            ("branch2", nn.MaxPool2d(3, 2))])
        self.repeat_1 = nn.Sequential(*[block17() for _ in range(repeats[1])])
        self.mixed_7a = Concat([
            ("branch0", nn.Sequential(Unit(1088, 256, 1), Unit(256, 384, 3, 2))),
            ("branch1", nn.Sequential(Unit(1088, 256, 1), Unit(256, 288, 3, 2))),
            ("branch2", nn.Sequential(Unit(1088, 256, 1), Unit(256, 288, 3, p=1), Unit(288, 320, 3, 2))),
            ("branch3", nn.MaxPool2d(3, 2))])
        self.repeat_2 = nn.Sequential(*[block8() for _ in range(repeats[2])])
        self.block8 = block8(1.0, False)
        self.conv2d_7b = Unit(2080, 1536, 1)
        self.drop = drop
        self.classif = nn.Linear(1536, classes)

    def forward(self, x):
        x = self.conv2d_2b(self.conv2d_2a(self.conv2d_1a(x)))
        x = self.conv2d_4a(self.conv2d_3b(F.max_pool2d(x, 3, 2)))
        x = self.mixed_5b(F.max_pool2d(x, 3, 2))
        x = self.mixed_7a(self.repeat_1(self.mixed_6a(self.repeat(x))))
        x = self.conv2d_7b(self.block8(self.repeat_2(x)))
        x = F.dropout(F.adaptive_avg_pool2d(x, 1).flatten(1), self.drop, self.training)
        return self.classif(x)


# DenseNet-BC for CIFAR (Huang et al. 2017, section 3 and the authors' Lua
# code): a 3x3 convolution to 2k channels, three dense blocks of (L-4)/6
# BN-ReLU-conv1x1(4k)-BN-ReLU-conv3x3(k) layers whose outputs are
# concatenated to their inputs, transitions BN-ReLU-conv1x1(theta m)-avgpool2,
# dropout after every convolution but the first, BN-ReLU-global pool-linear.
# torchvision's DenseNet names.
class DenseLayer(nn.Module):
    def __init__(self, i, k, drop):
        super().__init__()
        self.norm1, self.conv1 = nn.BatchNorm2d(i), conv(i, 4 * k, 1)
        self.norm2, self.conv2 = nn.BatchNorm2d(4 * k), conv(4 * k, k, 3)
        self.drop = drop

    def forward(self, x):
        y = F.dropout(self.conv1(F.relu(self.norm1(x))), self.drop, self.training)
        y = F.dropout(self.conv2(F.relu(self.norm2(y))), self.drop, self.training)
        return torch.cat([x, y], 1)


class Transition(nn.Module):
    def __init__(self, i, o, drop):
        super().__init__()
        self.norm, self.conv = nn.BatchNorm2d(i), conv(i, o, 1)
        self.drop = drop

    def forward(self, x):
        return F.avg_pool2d(F.dropout(self.conv(F.relu(self.norm(x))), self.drop, self.training), 2)


class DenseNetBC(nn.Module):
    def __init__(self, depth=190, growth=40, compression=0.5, drop=0.0, classes=100):
        super().__init__()
        n = (depth - 4) // 6
        c = 2 * growth
        layers = [("conv0", conv(3, c, 3))]
        for b in range(3):
            block = nn.Sequential(OrderedDict(
                ("denselayer%d" % (i + 1), DenseLayer(c + i * growth, growth, drop)) for i in range(n)))
            layers.append(("denseblock%d" % (b + 1), block))
            c += n * growth
            if b < 2:
                layers.append(("transition%d" % (b + 1), Transition(c, int(compression * c), drop)))
                c = int(compression * c)
        layers.append(("norm5", nn.BatchNorm2d(c)))
        self.features = nn.Sequential(OrderedDict(layers))
        self.classifier = nn.Linear(c, classes)

    def forward(self, x):
        return self.classifier(F.adaptive_avg_pool2d(F.relu(self.features(x)), 1).flatten(1))


# HAFrame's projection (Liang & Davis 2023; ltong1130ztr/HAFrame,
# util/arch/HAF_resnet.py), between a network's pooled features and its
# classifier, with the module names of lcl's proj=N option: their
# PointResidualTransformationLayer as written there (PReLU activations, no
# dropout, widths equal so the residual is the identity), after a bias-free
# Linear (their 1x1 convolution to N channels, applied after the average
# pool: the same map) and BatchNorm1d.
class PointResidualTransformationLayer(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear1 = nn.Linear(n, n, bias=False)
        self.bn1 = nn.BatchNorm1d(n)
        self.act_func1 = nn.PReLU(num_parameters=n)
        self.linear2 = nn.Linear(n, n, bias=False)
        self.bn2 = nn.BatchNorm1d(n)
        self.act_func2 = nn.PReLU(num_parameters=n)
        self.residual = nn.Identity()

    def forward(self, x):
        r = self.residual(x)
        x = self.act_func1(self.bn1(self.linear1(x)))
        x = self.act_func2(self.bn2(self.linear2(x)))
        return x + r


class Projection(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.linear = nn.Linear(d, n, bias=False)
        self.bn = nn.BatchNorm1d(n)
        self.residual_layer1 = PointResidualTransformationLayer(n)
        self.residual_layer2 = PointResidualTransformationLayer(n)

    def forward(self, x):
        return self.residual_layer2(self.residual_layer1(self.bn(self.linear(x))))


def project(m, head, n, classes):
    """m with HAFrame's projection to n features before its classifier
    attribute head, which becomes Linear(n, classes): a forward pre-hook
    projects the classifier's input, so the state names stay m's."""
    d = getattr(m, head).in_features
    m.projection = Projection(d, n)
    setattr(m, head, nn.Linear(n, classes))
    getattr(m, head).register_forward_pre_hook(lambda _, inp: (m.projection(inp[0]),))
    return m


def reference(name, classes, proj=None, **kw):
    """The PyTorch module of an lcl model name (the nine of the paper, and
    reduced configurations through keyword arguments), with HAFrame's
    projection to proj features before the classifier when proj is given."""
    m = _reference(name, classes, **kw)
    if proj:
        heads = {"senet154": "last_linear", "inception-resnet-v2": "classif"}
        head = "classifier" if name.startswith("densenet") else heads.get(name, "fc")
        m = project(m, head, proj, classes)
    return m


def _reference(name, classes, **kw):
    import torchvision.models as tv
    if name.startswith("resnet") or name.startswith("resnext"):
        from torchvision.models.resnet import BasicBlock, Bottleneck
        table = {"resnet18": (BasicBlock, [2, 2, 2, 2], 1, 64), "resnet34": (BasicBlock, [3, 4, 6, 3], 1, 64),
                 "resnet50": (Bottleneck, [3, 4, 6, 3], 1, 64), "resnet101": (Bottleneck, [3, 4, 23, 3], 1, 64),
                 "resnext101-32x8d": (Bottleneck, [3, 4, 23, 3], 32, 8)}
        block, layers, groups, gw = table[name]
        return tv.ResNet(block, kw.get("layers", layers), num_classes=classes, groups=kw.get("groups", groups),
                         width_per_group=kw.get("group_width", gw))
    if name.startswith("densenet1") or name.startswith("densenet2"):
        return tv.DenseNet(growth_rate=kw["growth"], block_config=kw["blocks"], num_init_features=kw["init"],
                           drop_rate=kw.get("drop", 0.0), num_classes=classes)
    if name == "densenet-bc-190-40":
        return DenseNetBC(kw.get("depth", 190), kw.get("growth", 40), drop=kw.get("drop", 0.0), classes=classes)
    if name == "senet154":
        return SENet154(kw.get("layers", (3, 8, 36, 3)), kw.get("groups", 64), kw.get("reduction", 16), classes=classes)
    if name == "inception-resnet-v2":
        return InceptionResNetV2(kw.get("repeats", (10, 20, 9)), classes=classes)
    if name == "wrn-28-10":
        return WRN(kw.get("depth", 28), kw.get("widen", 10), classes)
    raise ValueError("no reference for " + name)


_DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
           "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}


def load_safetensors(path):
    """A safetensors file as a state dict (Debian ships no safetensors
    package; the format is an 8-byte header length, a JSON header, data)."""
    b = open(path, "rb").read()
    n, = struct.unpack("<Q", b[:8])
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    sd = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        sd[k] = torch.frombuffer(bytearray(data[s:e]), dtype=_DTYPES[v["dtype"]]).reshape(v["shape"])
    return sd


def bench(argv=None):
    """One training step per architecture, timed: the PyTorch side of
    bench/models.sh (the same soft-target loss and SGD as lcl bench step)."""
    import argparse
    import time
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--kwargs", default="{}")
    ap.add_argument("--shape", default="3,224,224")
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"], help="bf16: autocast, as lcl's --precision bf16")
    ap.add_argument("--channels-last", action="store_true")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(a.kwargs).items()}
    m = reference(a.model, a.classes, **kw)
    c = a.classes
    T = torch.full((c, c), 0.1 / (c - 1))
    T.fill_diagonal_(0.9)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4)
    mf = torch.channels_last if a.channels_last else torch.contiguous_format
    m = m.to(memory_format=mf)
    x = torch.randn(a.batch, *[int(v) for v in a.shape.split(",")]).contiguous(memory_format=mf)
    y = torch.randint(0, c, (a.batch,))
    bf16 = a.precision == "bf16"
    m.train()

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            z = m(x)
        # The loss in float32, outside autocast, as lcl computes it.
        loss = -(T.index_select(0, y) * F.log_softmax(z.float(), 1)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    t, cpu = time.perf_counter(), time.process_time()
    for _ in range(a.steps):
        step()
    n = a.batch * a.steps
    print("%.3f %.3f" % (n / (time.perf_counter() - t), n / (time.process_time() - cpu)))


if __name__ == "__main__":
    bench()
