"""PIL + torchvision reference of bench/imagepipe.sh: the training transform
lcl's loader applies, batched by a DataLoader into uint8 CHW tensors, as
lcl's uint8 batches. Two inputs:
  DIR of JPEGs (a folder data set): RandomResizedCrop(224) with bilinear
    resizing, RandomHorizontalFlip, as lcl's ImageNet-style path;
  --cifar FILE (CIFAR-100 binary, 2 label bytes + 3072 pixel bytes per
    record): RandomCrop(32, padding=4), RandomHorizontalFlip, as lcl's
    small-image path.
then --policy: none, randaugment (RandAugment(2, 9)) or trivialaugment
(TrivialAugmentWide()), on the uint8 image before PILToTensor. --backend pil
(PIL images, torchvision's default) or tensor (uint8 tensors: the JPEG decoded
by torchvision.io.decode_jpeg, every transform on tensors).
Prints one JSON line: images, seconds, img_per_s, workers."""
import argparse
import glob
import json
import os
import time

import numpy as np
import torch
from PIL import Image
from torchvision import io, transforms


def contiguous(t):
    # torchvision 0.14's tensor equalize views its input flat: a cropped
    # (strided) tensor must be made contiguous first.
    return t.contiguous()


def policy(name):
    if name == "randaugment":
        return [transforms.RandAugment(2, 9)]
    if name == "trivialaugment":
        return [transforms.TrivialAugmentWide()]
    return []


class Files(torch.utils.data.Dataset):
    def __init__(self, files, size, pol, backend):
        self.files, self.backend = files, backend
        # Antialiased bilinear as PIL's (tensors need it asked for).
        rrc = transforms.RandomResizedCrop(size, antialias=True) if backend == "tensor" else transforms.RandomResizedCrop(size)
        crop = [rrc, transforms.RandomHorizontalFlip()]
        if backend == "tensor":
            crop.append(contiguous)
        end = [transforms.PILToTensor()] if backend == "pil" else []
        self.t = transforms.Compose(crop + policy(pol) + end)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if self.backend == "tensor":
            return self.t(io.decode_jpeg(io.read_file(self.files[i]), mode=io.ImageReadMode.RGB)), 0
        with Image.open(self.files[i]) as img:
            return self.t(img.convert("RGB")), 0


class Small(torch.utils.data.Dataset):
    def __init__(self, path, pol, backend):
        raw = np.fromfile(path, dtype=np.uint8).reshape(-1, 2 + 3072)
        self.x = raw[:, 2:].reshape(-1, 3, 32, 32)
        self.backend = backend
        crop = [transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip()]
        if backend == "tensor":
            crop.append(contiguous)
        end = [transforms.PILToTensor()] if backend == "pil" else []
        self.t = transforms.Compose(crop + policy(pol) + end)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.backend == "tensor":
            return self.t(torch.from_numpy(self.x[i])), 0
        return self.t(Image.fromarray(self.x[i].transpose(1, 2, 0))), 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--cifar")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--policy", default="none", choices=["none", "randaugment", "trivialaugment"])
    ap.add_argument("--backend", default="pil", choices=["pil", "tensor"])
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.cifar:
        ds = Small(a.cifar, a.policy, a.backend)
    else:
        ds = Files(sorted(glob.glob(os.path.join(a.dir, "train", "*", "*.jpg"))), a.size, a.policy, a.backend)
    # workers=1: decoding in this process (one core); more: DataLoader workers.
    nw = 0 if a.workers <= 1 else a.workers
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=nw,
                                     persistent_workers=nw > 0)
    n, start = 0, time.perf_counter()
    for _ in range(a.passes):
        for x, _ in dl:
            n += x.shape[0]
    el = time.perf_counter() - start
    print(json.dumps({"images": n, "seconds": el, "img_per_s": n / el, "workers": a.workers}))


if __name__ == "__main__":
    main()
