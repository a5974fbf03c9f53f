"""PIL + torchvision reference of bench/imagepipe.sh: the ImageNet training
transform lcl's loader applies (RandomResizedCrop(224) with bilinear
resizing, RandomHorizontalFlip) to the JPEGs of a folder data set, ending in
uint8 CHW tensors (PILToTensor) batched by a DataLoader, as lcl's uint8
batches. Prints one JSON line: images, seconds, img_per_s, workers."""
import argparse
import glob
import json
import os
import time

import torch
from PIL import Image
from torchvision import transforms


class Files(torch.utils.data.Dataset):
    def __init__(self, files, size):
        self.files = files
        self.t = transforms.Compose([transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip(),
                                     transforms.PILToTensor()])

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with Image.open(self.files[i]) as img:
            return self.t(img.convert("RGB")), 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--size", type=int, default=224)
    a = ap.parse_args()
    torch.set_num_threads(1)
    files = sorted(glob.glob(os.path.join(a.dir, "train", "*", "*.jpg")))
    ds = Files(files, a.size)
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
