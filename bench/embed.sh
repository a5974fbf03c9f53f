#!/bin/sh
# bench/embed.sh — lcl's doc2vec (package embed) next to gensim 4.2 (Debian's
# python3-gensim, run with /usr/bin/python3) on the WordNet noun-synset
# corpus, in one invocation: training throughput (effective words/s),
# peak RSS and inference time for PV-DBOW, PV-DBOW with word training and
# PV-DM, then quality (Spearman of ImageNet-1k class cosines against WordNet
# Wu-Palmer, all 499,500 pairs) for both tools and a TF-IDF baseline.
# Both tools train on the same tokenized corpus with the same settings:
# d=100, window 5, negative 5, min_count 2, sample 1e-3, alpha 0.025→0.0001.
#
# Environment: EPOCHS (10), WORKERS (2), QUALITY_EPOCHS (15; the default
# settings of `lcl embed`), KEEP (directory to keep the files in), ROUNDS
# (1): how many times the whole sequence runs, gensim and lcl back to back
# for each setting; with ROUNDS > 1 the speed column is the median of the
# rounds' paired ratios (gensim time / lcl time of one round) with their
# range, and the other columns are the last round's. Quality is computed
# once, on the last round's vectors (each round trains the same seeds).
set -eu
cd "$(dirname "$0")/.."
EPOCHS=${EPOCHS:-10}
ROUNDS=${ROUNDS:-1}
WORKERS=${WORKERS:-2}
QUALITY_EPOCHS=${QUALITY_EPOCHS:-15}
DIR=${KEEP:-$(mktemp -d)}
mkdir -p "$DIR"
PY=/usr/bin/python3
go build -o "$DIR/embedbench" ./bench/embedbench
"$DIR/embedbench" corpus -o "$DIR/corpus.txt"
: > "$DIR/results.jsonl"
run() { # label, epochs, mode flags...
	label=$1 epochs=$2; shift 2
	# gensim first, then Go, back to back, so both see the same machine load.
	$PY bench/embed_gensim.py --corpus "$DIR/corpus.txt" --epochs "$epochs" --workers "$WORKERS" \
		--vectors "$DIR/gensim-$label.txt" --label "$label" "$@" >> "$DIR/results.jsonl"
	gorun "$label" "$epochs" "$@" -shared-negatives=false # gensim's training step
}
gorun() { # label, epochs, mode flags... (lcl only)
	label=$1 epochs=$2; shift 2
	"$DIR/embedbench" train -corpus "$DIR/corpus.txt" -epochs "$epochs" -workers "$WORKERS" \
		-vectors "$DIR/go-$label.txt" -label "$label" "$@" >> "$DIR/results.jsonl"
}
# PV-DBOW + words as gensim trains it (noise words drawn per context word),
# then as lcl trains it by default (--shared-negatives: drawn once per
# centre word), which gensim does not offer: its row is set against
# gensim's PV-DBOW + words of the same epochs.
for _ in $(seq "$ROUNDS"); do
	run dbow "$EPOCHS" --mode dbow
	run dbow+words "$EPOCHS" --mode dbow --words
	gorun dbow+words+shared "$EPOCHS" --mode dbow --words -shared-negatives
	run dm "$EPOCHS" --mode dm
	if [ "$QUALITY_EPOCHS" != "$EPOCHS" ]; then
		run "dbow+words-e$QUALITY_EPOCHS" "$QUALITY_EPOCHS" --mode dbow --words
		gorun "dbow+words+shared-e$QUALITY_EPOCHS" "$QUALITY_EPOCHS" --mode dbow --words -shared-negatives
	fi
done
(cd "$DIR" && ./embedbench quality -tfidf corpus.txt go-*.txt gensim-*.txt) > "$DIR/quality.json"
$PY - "$DIR" <<'PY'
import json, statistics, sys
d = sys.argv[1]
rows = [json.loads(l) for l in open(d + '/results.jsonl')]
q = json.load(open(d + '/quality.json'))
by = {}  # (tool, label) -> its rows, one per round, in order
for r in rows:
    by.setdefault((r['tool'], r['label']), []).append(r)
labels = list(dict.fromkeys(r['label'] for r in rows if r['tool'] == 'go'))
rounds = len(by[('go', labels[0])])
print('doc2vec on the WordNet noun corpus (82,115 docs), go = lcl embed, gs = gensim 4.2')
if rounds > 1:
    print('speed: median of %d paired ratios (range); other columns: the last round' % rounds)
print('%-16s %10s %10s %19s  %8s %8s %6s  %7s %7s %6s  %6s %6s' % (
    'setting', 'go w/s', 'gs w/s', 'speed', 'go MB', 'gs MB', 'ratio',
    'go µs', 'gs µs', 'ratio', 'go ρ', 'gs ρ'))
for l in labels:
    gl = l.replace('+shared', '')  # gensim has no shared negatives: its plain run
    gs, ss = by[('go', l)], by[('gensim', gl)]
    g, s = gs[-1], ss[-1]
    # gensim counts one extra "word" per document (the tag) in its effective
    # words; the throughput ratio is therefore taken on training time for
    # the same corpus and epochs (= ratio of raw words/s), paired per round
    # (a shared-negatives row with the same round's plain gensim run).
    pr = sorted(b['seconds'] / a['seconds'] for a, b in zip(gs, ss))
    med = statistics.median(pr)
    speed = '%.2f' % med if len(pr) == 1 else '%.2f (%.2f-%.2f)' % (med, pr[0], pr[-1])
    print('%-16s %10.0f %10.0f %19s  %8.0f %8.0f %6.2f  %7.1f %7.1f %6.2f  %6.3f %6.3f' % (
        l, g['words_per_s'], s['words_per_s'], speed,
        g['peak_rss_mb'], s['peak_rss_mb'], s['peak_rss_mb'] / g['peak_rss_mb'],
        g['infer_us_per_doc_epoch'], s['infer_us_per_doc_epoch'],
        s['infer_us_per_doc_epoch'] / g['infer_us_per_doc_epoch'],
        q['go-%s.txt' % l], q['gensim-%s.txt' % gl]))
print('TF-IDF baseline ρ = %.3f' % q['tfidf'])
print('ratios: speed = gensim time / go time, memory = gensim peak RSS / go peak RSS,')
print('inference = gensim µs / go µs (all ≥ 1 means go is at least as good)')
PY
echo "files in $DIR"
