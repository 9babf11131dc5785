package kubernetes

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// helmVersion is the helm CI installs (.ci/run) to render the chart.
const helmVersion = "v3.22.0"

// helm returns the helm binary: $HELM_BIN, or helm on the PATH. CI
// sets HELM_REQUIRED, so there the test cannot skip.
func helm(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM_BIN"); h != "" {
		return h
	}
	if h, err := exec.LookPath("helm"); err == nil {
		return h
	}
	msg := "helm is not installed; to run this test: go install helm.sh/helm/v3/cmd/helm@" + helmVersion
	if os.Getenv("HELM_REQUIRED") != "" {
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
		{mode: "gateway", set: []string{"metrics.port=9090"}, kinds: []string{"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"}},
		{mode: "sidecar", kinds: []string{"Deployment"}},
		{mode: "sidecar", set: []string{"metrics.port=9090"}, kinds: []string{"Deployment"}},
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

// TestHelmValuesDocumented: every value of the chart is in its README's
// table, and the table names no value the chart does not have.
func TestHelmValuesDocumented(t *testing.T) {
	raw, err := os.ReadFile("../helm/toolguard/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	var leaves []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			leaves = append(leaves, prefix+k)
		}
	}
	walk("", values)
	readme, err := os.ReadFile("../helm/toolguard/README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The first cell of each row names values: `a.b`, and `.c` for a
	// sibling of the value before it.
	documented := map[string]bool{}
	code := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(string(readme), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		parent := ""
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			if strings.HasPrefix(name, ".") {
				name = parent + name
			}
			if i := strings.LastIndex(name, "."); i >= 0 {
				parent = name[:i]
			}
			documented[name] = true
		}
	}
	covered := func(leaf string) bool {
		// A value documented whole (env, resources) covers its keys.
		for p := leaf; ; {
			if documented[p] {
				return true
			}
			i := strings.LastIndex(p, ".")
			if i < 0 {
				return false
			}
			p = p[:i]
		}
	}
	for _, leaf := range leaves {
		if !covered(leaf) {
			t.Errorf("value %s is not documented in the chart's README", leaf)
		}
	}
	for name := range documented {
		if !slices.ContainsFunc(leaves, func(l string) bool { return l == name || strings.HasPrefix(l, name+".") }) {
			t.Errorf("the chart's README documents %s, which values.yaml does not have", name)
		}
	}
}
