#!/usr/bin/python3
"""gensim 4.2 side of bench/embed.sh: trains Doc2Vec on the same tokenized
corpus with the same settings as `embedbench train` and prints one JSON line
with the same fields (effective words/s over model.train, peak RSS, inference
µs per document per epoch)."""
import argparse, json, logging, re, time

from gensim.models.doc2vec import Doc2Vec, TaggedDocument


def peak_rss_mb():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) / 1024
    return 0.0


class EffectiveWords(logging.Handler):
    """Doc2Vec.train returns nothing in gensim 4.2; the effective word
    counts are in its per-epoch log lines."""
    def __init__(self):
        super().__init__(logging.INFO)
        self.words = 0

    def emit(self, record):
        msg = record.getMessage()
        if msg.startswith('EPOCH'):
            m = re.search(r'\((\d+) effective words\)', msg)
            if m:
                self.words += int(m.group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--corpus', default='corpus.txt')
    p.add_argument('--mode', default='dbow', choices=['dbow', 'dm'])
    p.add_argument('--words', action='store_true')
    p.add_argument('--epochs', type=int, default=10)
    p.add_argument('--workers', type=int, default=2)
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--vectors', default='')
    p.add_argument('--infer', type=int, default=1000)
    p.add_argument('--imagenet', default='/work/shared/data/imagenet/LOC_synset_mapping.txt')
    p.add_argument('--label', default='')
    a = p.parse_args()
    docs = []
    with open(a.corpus, encoding='utf-8') as f:
        for line in f:
            tag, _, text = line.rstrip('\n').partition('\t')
            docs.append(TaggedDocument(text.split(), [tag]))
    m = Doc2Vec(vector_size=100, window=5, negative=5, hs=0, min_count=2, sample=1e-3,
                epochs=a.epochs, workers=a.workers, seed=a.seed, alpha=0.025, min_alpha=0.0001,
                dm=1 if a.mode == 'dm' else 0, dm_mean=1, dbow_words=1 if a.words else 0)
    m.build_vocab(docs)
    h = EffectiveWords()
    log = logging.getLogger('gensim')
    log.setLevel(logging.INFO)
    log.addHandler(h)
    t0 = time.perf_counter()
    m.train(docs, total_examples=len(docs), epochs=a.epochs)
    secs = time.perf_counter() - t0
    log.removeHandler(h)
    eff = h.words
    ids = [l.split(' : ')[0].strip() for l in open(a.imagenet) if l.strip()]
    by_tag = {d.tags[0]: d.words for d in docs}
    n = min(a.infer, len(ids))
    t0 = time.perf_counter()
    for i in ids[:n]:
        m.infer_vector(by_tag[i], epochs=a.epochs)
    infer_us = (time.perf_counter() - t0) * 1e6 / (n * a.epochs)
    if a.vectors:
        with open(a.vectors, 'w') as f:
            f.write('%d %d\n' % (len(ids), m.vector_size))
            for i in ids:
                f.write(i + ' ' + ' '.join('%g' % x for x in m.dv[i]) + '\n')
    print(json.dumps({'tool': 'gensim', 'label': a.label, 'effective_words': eff, 'seconds': secs,
                      'words_per_s': eff / secs, 'peak_rss_mb': peak_rss_mb(),
                      'infer_us_per_doc_epoch': infer_us}))


if __name__ == '__main__':
    main()
