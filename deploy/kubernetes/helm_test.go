package kubernetes

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// helmVersion is the helm CI installs (.ci/run) to render the chart.
const helmVersion = "v3.22.0"

// helm returns the helm binary: $TOOLGUARD_HELM, or helm on the PATH. CI
// sets TOOLGUARD_HELM_REQUIRED, so there the test cannot skip.
func helm(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("TOOLGUARD_HELM"); h != "" {
		return h
	}
	if h, err := exec.LookPath("helm"); err == nil {
		return h
	}
	msg := "helm is not installed; to run this test: go install helm.sh/helm/v3/cmd/helm@" + helmVersion
	if os.Getenv("TOOLGUARD_HELM_REQUIRED") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestHelmChart renders deploy/helm/toolguard in each mode and checks what
// it renders against the invariants of the example manifests.
func TestHelmChart(t *testing.T) {
	bin := helm(t)
	vars, srv := toolguardEnv(t)
	if out, err := exec.Command(bin, "lint", "../helm/toolguard").CombinedOutput(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	tests := []struct {
		mode  string
		set   []string
		kinds []string
	}{
		{mode: "gateway", kinds: []string{"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"}},
		{mode: "gateway", set: []string{"autoscaling.enabled=false", "podDisruptionBudget.enabled=false"}, kinds: []string{"Deployment", "Service"}},
		{mode: "sidecar", kinds: []string{"Deployment"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode+" "+strings.Join(tt.set, ","), func(t *testing.T) {
			args := []string{"template", "tg", "../helm/toolguard", "--set", "mode=" + tt.mode}
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			out, err := exec.Command(bin, args...).Output()
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			objs := parse(t, "chart", out)
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.Kind)
			}
			// helm orders objects by kind.
			slices.Sort(kinds)
			want := slices.Sorted(slices.Values(tt.kinds))
			if !slices.Equal(kinds, want) {
				t.Errorf("rendered %v, want %v", kinds, want)
			}
			checkObjects(t, objs, vars, srv)
		})
	}
	if out, err := exec.Command(bin, "template", "tg", "../helm/toolguard", "--set", "mode=other").CombinedOutput(); err == nil {
		t.Errorf("mode=other rendered:\n%s", out)
	}
}
