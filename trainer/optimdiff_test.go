package trainer

import "testing"

// A checkpoint written with other optimisation settings names them as the
// flags that set them (the keys are the settings table's).
func TestOptimDiffNamesTheFlags(t *testing.T) {
	base := "batch=128 momentum=0.9 nesterov=true wd=0.0005 schedule={Kind:cosine LR:0.05 Gamma:0 StepSize:0 Milestones:[] Warmup:0 MinLR:0}"
	for _, tc := range []struct{ have, want, diff string }{
		{base, "batch=128 momentum=0.9 nesterov=true wd=0.0005 schedule={Kind:cosine LR:0.1 Gamma:0 StepSize:0 Milestones:[] Warmup:0 MinLR:0}",
			"--lr 0.05, this run has --lr 0.1"},
		{base, "batch=64 momentum=0.9 nesterov=false wd=0.0005 schedule={Kind:multistep LR:0.05 Gamma:0.1 StepSize:0 Milestones:[30 60] Warmup:0 MinLR:0}",
			"--batch 128, --nesterov true, --schedule cosine, --gamma 0, --milestones [], this run has --batch 64, --nesterov false, --schedule multistep, --gamma 0.1, --milestones [30 60]"}, // milestones' own spaces
		{base, "batch=64 momentum=0.9 nesterov=false wd=0.0005 schedule={Kind:step LR:0.05 Gamma:0.1 StepSize:30 Milestones:[] Warmup:0 MinLR:0}",
			"--batch 128, --nesterov true, --schedule cosine, --gamma 0, --step-size 0, this run has --batch 64, --nesterov false, --schedule step, --gamma 0.1, --step-size 30"},
		{base + " clip=1", base + " clip=2", "--clip-grad-norm 1, this run has --clip-grad-norm 2"},
		{base, base + " ema=0.999", ""}, // a field only one side has
		{base, base, ""},
	} {
		if got := optimDiff(tc.have, tc.want); got != tc.diff {
			t.Errorf("optimDiff(%q, %q) = %q, want %q", tc.have, tc.want, got, tc.diff)
		}
	}
}
