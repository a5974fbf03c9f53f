#!/usr/bin/python3
"""Check the dataset-class -> WordNet 3.0 noun synset mapping files.

For every row of each mapping file this verifies that
  * the row has 5 tab-separated fields and the index counts up from 0,
  * the class name is the dataset's own name at that index (when the
    dataset's class list can be found, see --classes),
  * the wnid is 'n' + 8 digits and a synset line of data.noun starts at that
    byte offset, with ss_type 'n',
  * the lemma is one of that synset's words (case-insensitive, spaces read
    as underscores),
  * the note says "not first sense" exactly when the chosen synset is not
    the lemma's first sense in index.noun (so every such judgement call is
    marked),
  * no two classes of one file map to the same synset,
and prints each row's wnid, sense number, lemmas and the first 60 characters
of the gloss, for review by eye. Exit status: 0 all good, 1 any mismatch,
2 usage error or unreadable input.

Standard library only. Usage:
  python3 check_mappings.py [--wordnet DIR] [--classes DIR] [FILE.tsv ...]
With no files it checks the four mapping files next to this script.
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FILES = ["cifar100-wordnet.tsv", "awa2-wordnet.tsv", "fashion-mnist-wordnet.tsv", "quickdraw-wordnet.tsv"]

# Fashion-MNIST ships no class-name file; this is the order of its README.
FASHION_MNIST = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                 "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]

# Quick, Draw!'s 345 category names ship next to this script (names contain
# spaces: one per line, class index = line number - 1).
QUICKDRAW_CATEGORIES = os.path.join(HERE, "quickdraw", "categories.txt")
QUICKDRAW_CLASSES = 345

WNID_RE = re.compile(r"^n(\d{8})$")
NOT_FIRST = "not first sense"


def norm(word):
    return word.strip().lower().replace(" ", "_")


class WordNet:
    """Just enough of WordNet 3.0's noun files: synsets by offset, senses by lemma."""

    def __init__(self, wndir):
        self.data_path = os.path.join(wndir, "data.noun")
        self.index_path = os.path.join(wndir, "index.noun")
        with open(self.data_path, "rb") as f:
            self.data = f.read()
        self.senses = {}
        with open(self.index_path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.startswith("  "):  # license header
                    continue
                p = line.split()
                try:
                    synset_cnt = int(p[2])
                    p_cnt = int(p[3])
                    offsets = p[4 + p_cnt + 2:]
                except (IndexError, ValueError):
                    raise ValueError(f"{self.index_path}:{lineno}: malformed index line")
                if len(offsets) != synset_cnt:
                    raise ValueError(f"{self.index_path}:{lineno}: want {synset_cnt} offsets, got {len(offsets)}")
                self.senses[p[0]] = offsets

    def synset(self, offset):
        """Returns (ss_type, words, gloss) for the synset line at byte offset, or an error string."""
        off = int(offset)
        if off >= len(self.data):
            return f"offset {offset} is past the end of {self.data_path}"
        if off > 0 and self.data[off - 1:off] != b"\n":
            return f"offset {offset} is not the start of a line in {self.data_path}"
        end = self.data.find(b"\n", off)
        line = self.data[off:end if end >= 0 else len(self.data)].decode("utf-8")
        head, _, gloss = line.partition(" | ")
        f = head.split()
        if not f or f[0] != offset:
            return f"the line at byte {offset} of {self.data_path} starts with {f[0] if f else '(nothing)'!r}, not {offset}"
        try:
            w_cnt = int(f[3], 16)
            words = [f[4 + 2 * i] for i in range(w_cnt)]
        except (IndexError, ValueError):
            return f"malformed synset line at byte {offset} of {self.data_path}"
        return f[2], words, gloss.strip()

    def sense_number(self, lemma, offset):
        """1-based sense number of the synset among the lemma's noun senses, or 0."""
        offsets = self.senses.get(norm(lemma), [])
        return offsets.index(offset) + 1 if offset in offsets else 0


def class_names(fname, classes_dir):
    """The dataset's own class names in order, or None when they cannot be found."""
    if fname.startswith("fashion-mnist"):
        return FASHION_MNIST
    if fname.startswith("quickdraw"):
        with open(QUICKDRAW_CATEGORIES, encoding="utf-8") as f:
            names = [l.rstrip("\r\n") for l in f if l.strip()]
        if len(names) != QUICKDRAW_CLASSES:
            raise OSError(f"{QUICKDRAW_CATEGORIES}: {len(names)} categories, want {QUICKDRAW_CLASSES}")
        return names
    if classes_dir is None:
        return None
    if fname.startswith("cifar100"):
        path = os.path.join(classes_dir, "cifar100", "fine_label_names.txt")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return f.read().split()
    if fname.startswith("awa2"):
        path = os.path.join(classes_dir, "awa2", "classes.txt")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return [l.split("\t")[1].strip() for l in f if l.strip()]
    return None


def find_classes_dir():
    for d in (os.path.join(HERE, "..", "..", "..", "shared", "data"),  # checkout next to shared/
              os.path.join(HERE, "..", "..", "..", "..", "shared", "data")):  # a worktree one level deeper
        if os.path.isdir(os.path.join(d, "cifar100")):
            return os.path.normpath(d)
    return None


def check_file(path, wn, classes_dir):
    """Checks one mapping file; prints its rows and returns the list of errors."""
    errors = []
    fname = os.path.basename(path)
    want_names = class_names(fname, classes_dir)
    print(f"== {path}")
    if want_names is None:
        print(f"   (class names not cross-checked: no dataset class list found for {fname})")
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or not lines[0].startswith("#"):
        errors.append(f"{path}:1: want a header line starting with '#'")
    seen = {}
    rows = 0
    for lineno, line in enumerate(lines, 1):
        if line.startswith("#"):
            if lineno != 1:
                errors.append(f"{path}:{lineno}: comment line after the header")
            continue
        where = f"{path}:{lineno}"
        fields = line.split("\t")
        if len(fields) != 5:
            errors.append(f"{where}: want 5 tab-separated fields (index, name, wnid, lemma, note), got {len(fields)}")
            rows += 1
            continue
        idx, name, wnid, lemma, note = fields
        if idx != str(rows):
            errors.append(f"{where}: index {idx!r}, want {rows}")
        if want_names is not None:
            if rows >= len(want_names):
                errors.append(f"{where}: extra row; the dataset has {len(want_names)} classes")
            elif name != want_names[rows]:
                errors.append(f"{where}: class name {name!r}, the dataset's class {rows} is {want_names[rows]!r}")
        rows += 1
        m = WNID_RE.match(wnid)
        if not m:
            errors.append(f"{where}: wnid {wnid!r} is not 'n' followed by 8 digits")
            continue
        offset = m.group(1)
        syn = wn.synset(offset)
        if isinstance(syn, str):
            errors.append(f"{where}: wnid {wnid}: {syn}")
            continue
        ss_type, words, gloss = syn
        if ss_type != "n":
            errors.append(f"{where}: wnid {wnid}: ss_type {ss_type!r}, want 'n'")
        if norm(lemma) not in {norm(w) for w in words}:
            errors.append(f"{where}: lemma {lemma!r} is not a word of {wnid} ({', '.join(words)})")
        sense = wn.sense_number(lemma, offset)
        if sense == 0:
            errors.append(f"{where}: index.noun does not list {wnid} among the senses of {lemma!r}")
        elif (sense > 1) != (NOT_FIRST in note):
            want = "say" if sense > 1 else "not say"
            errors.append(f"{where}: {wnid} is sense {sense} of {lemma!r}, so the note must {want} {NOT_FIRST!r}")
        if wnid in seen:
            errors.append(f"{where}: {wnid} is already used by line {seen[wnid]}")
        seen[wnid] = lineno
        print(f"{idx:>3} {name:<16} {wnid} s{sense} {','.join(words)[:48]:<48} | {gloss[:60]}")
    if want_names is not None and rows < len(want_names):
        errors.append(f"{path}: {rows} rows, the dataset has {len(want_names)} classes")
    print(f"   {rows} rows")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wordnet", default=os.environ.get("WNHOME") or "/usr/share/wordnet",
                    help="WordNet 3.0 dict directory holding data.noun and index.noun (default $WNHOME, else /usr/share/wordnet)")
    ap.add_argument("--classes", default=None,
                    help="directory with cifar100/fine_label_names.txt and awa2/classes.txt (default: the project's shared/data if found)")
    ap.add_argument("files", nargs="*", help="mapping files (default: the four next to this script)")
    args = ap.parse_args()
    files = args.files or [os.path.join(HERE, f) for f in DEFAULT_FILES]
    classes_dir = args.classes or find_classes_dir()
    if args.classes and not os.path.isdir(args.classes):
        print(f"check_mappings: --classes {args.classes}: not a directory", file=sys.stderr)
        return 2
    try:
        wn = WordNet(args.wordnet)
    except (OSError, ValueError) as e:
        print(f"check_mappings: cannot read WordNet in {args.wordnet}: {e}", file=sys.stderr)
        return 2
    errors = []
    for path in files:
        try:
            errors += check_file(path, wn, classes_dir)
        except OSError as e:
            print(f"check_mappings: {e}", file=sys.stderr)
            return 2
    for e in errors:
        print("ERROR " + e, file=sys.stderr)
    print(f"{len(files)} files, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
