"""Activation memory of the paper's nine architectures, measured with
PyTorch's saved-tensor hooks: the bytes autograd keeps for the backward pass
of one training-mode forward (every saved tensor counted once per storage),
per image and at the batch size of each architecture's protocol, next to
the parameter count and the bytes of weights, gradients and SGD momentum.
The modules are torchvision's or bench/models_ref.py's, whose structure lcl
builds op for op (the strict-load tests), so autograd saves the same
tensors for lcl. Prints a Markdown table (docs/trainer.md).
    usage: python3 bench/activations.py [--batch-per-measurement 2]"""
import argparse
import sys

import torch
import torch.nn.functional as F

import models_ref

# name, input C,H,W, classes, preset, protocol batch
NINE = [
    ("resnet18", (3, 224, 224), 1000, "imagenet-resnet", 256),
    ("resnet34", (3, 224, 224), 1000, "imagenet-resnet", 256),
    ("resnet50", (3, 224, 224), 1000, "imagenet-resnet", 256),
    ("resnet101", (3, 224, 224), 1000, "imagenet-resnet", 256),
    ("wrn-28-10", (3, 32, 32), 100, "wrn-cifar", 128),
    ("resnext101-32x8d", (3, 224, 224), 1000, "resnext-imagenet", 256),
    ("senet154", (3, 224, 224), 1000, "senet-imagenet", 1024),
    ("inception-resnet-v2", (3, 299, 299), 1000, "inception-resnet-v2", 32),
    ("densenet-bc-190-40", (3, 32, 32), 100, "densenet-cifar", 64),
]


def saved_bytes(model, x):
    """Bytes of the tensors autograd saves, parameters excluded."""
    params = {p.data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        if s.data_ptr() not in params:
            seen[s.data_ptr()] = s.nbytes()
        return t

    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
        loss = F.log_softmax(out, 1).mean()
    del loss, out
    return sum(seen.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-per-measurement", type=int, default=2)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(2)
    n = a.batch_per_measurement
    print("| model | input | parameters | weights+grads+momentum | activations per image | protocol batch | activations at that batch |")
    print("|---|---|---|---|---|---|---|")
    for name, shape, classes, preset, batch in NINE:
        m = models_ref.reference(name, classes)
        params = sum(p.numel() for p in m.parameters())
        per = saved_bytes(m, torch.randn(n, *shape)) / n
        print("| %s | %s | %.2f M | %.2f GB | %.1f MB | %d (`%s`) | %.1f GB |" % (
            name, "×".join(map(str, shape)), params / 1e6, 3 * 4 * params / 1e9, per / 1e6, batch, preset,
            per * batch / 1e9), flush=True)
        del m


if __name__ == "__main__":
    sys.exit(main())
