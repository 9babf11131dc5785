// Package kubernetes holds example manifests; its test keeps them valid and
// in step with toolguard's routes and configuration.
package kubernetes

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caarlos0/env/v10"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
	"gopkg.in/yaml.v3"
)

// The fields of the objects the manifests hold that the API server requires
// or that toolguard depends on.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		// Deployment
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *int        `yaml:"terminationGracePeriodSeconds"`
				Containers                    []container `yaml:"containers"`
				InitContainers                []container `yaml:"initContainers"`
			} `yaml:"spec"`
		} `yaml:"template"`
		// PodDisruptionBudget
		MinAvailable   *int `yaml:"minAvailable"`
		MaxUnavailable *int `yaml:"maxUnavailable"`
		// HorizontalPodAutoscaler
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas int `yaml:"minReplicas"`
		MaxReplicas int `yaml:"maxReplicas"`
		// Service: a plain label map.
		ServiceSelector map[string]string `yaml:"-"`
		Ports           []struct {
			Port int `yaml:"port"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type container struct {
	Name          string `yaml:"name"`
	Image         string `yaml:"image"`
	RestartPolicy string `yaml:"restartPolicy"`
	Ports         []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	StartupProbe   *probe `yaml:"startupProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsNonRoot           *bool `yaml:"runAsNonRoot"`
		ReadOnlyRootFilesystem *bool `yaml:"readOnlyRootFilesystem"`
	} `yaml:"securityContext"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
	} `yaml:"httpGet"`
}

// load parses every document of every manifest.
func load(t *testing.T) map[string][]object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	out := map[string][]object{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = parse(t, f, b)
	}
	return out
}

// parse decodes every document of a YAML stream.
func parse(t *testing.T, name string, b []byte) []object {
	t.Helper()
	var out []object
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var node yaml.Node
		if err := dec.Decode(&node); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if node.Kind == 0 || (len(node.Content) > 0 && node.Content[0].Kind == 0) {
			continue // an empty document
		}
		var o object
		if err := node.Decode(&o); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o.Kind == "" && o.APIVersion == "" {
			continue
		}
		if o.Kind == "Service" {
			var svc struct {
				Spec struct {
					Selector map[string]string `yaml:"selector"`
				} `yaml:"spec"`
			}
			node.Decode(&svc)
			o.Spec.ServiceSelector = svc.Spec.Selector
		}
		out = append(out, o)
	}
	return out
}

func TestManifests(t *testing.T) {
	vars, srv := toolguardEnv(t)
	for file, objs := range load(t) {
		t.Run(file, func(t *testing.T) { checkObjects(t, objs, vars, srv) })
	}
}

// toolguardEnv returns the names of toolguard's variables and a running
// toolguard whose probe paths the manifests' probes are checked against.
func toolguardEnv(t *testing.T) (map[string]bool, *httptest.Server) {
	t.Helper()
	params, err := env.GetFieldParams(&policy.Config{})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, p := range params {
		vars[p.Key] = true
	}
	h, err := proxy.New(proxy.Options{Config: policy.Default()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return vars, srv
}

// checkObjects checks the objects of one manifest (or one rendering of the
// chart) against the invariants toolguard's deployment needs.
func checkObjects(t *testing.T, objs []object, vars map[string]bool, srv *httptest.Server) {
	t.Helper()
	var toolguards int
	for _, o := range objs {
		if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
			t.Errorf("%s %q lacks apiVersion, kind or metadata.name", o.Kind, o.Metadata.Name)
		}
		switch o.Kind {
		case "Service":
			if len(o.Spec.ServiceSelector) == 0 || len(o.Spec.Ports) == 0 {
				t.Errorf("Service %s has no selector or ports", o.Metadata.Name)
			}
			if !selects(o.Spec.ServiceSelector, templateLabels(objs)) {
				t.Errorf("Service %s selects no pod template of its file", o.Metadata.Name)
			}
		case "Deployment":
			sel, labels := o.Spec.Selector.MatchLabels, o.Spec.Template.Metadata.Labels
			if len(sel) == 0 || !selects(sel, []map[string]string{labels}) {
				t.Errorf("Deployment %s: selector %v does not match template labels %v", o.Metadata.Name, sel, labels)
			}
			if len(o.Spec.Template.Spec.Containers) == 0 {
				t.Errorf("Deployment %s has no containers", o.Metadata.Name)
			}
			for _, c := range o.Spec.Template.Spec.Containers {
				if c.Name == "" || c.Image == "" {
					t.Errorf("a container lacks name or image: %+v", c)
				}
				if c.Name != "toolguard" {
					continue
				}
				toolguards++
				checkToolguard(t, c, vars, srv)
				checkPod(t, o, c)
			}
			for _, c := range o.Spec.Template.Spec.InitContainers {
				if c.Name != "toolguard" {
					continue
				}
				// A sidecar is a native one: started before the
				// application and stopped after it.
				if c.RestartPolicy != "Always" {
					t.Errorf("the toolguard init container is not a native sidecar (restartPolicy: Always)")
				}
				// The kubelet starts the application once the sidecar's
				// startup probe succeeds, or at once without one: the
				// application's first request would find nothing listening.
				checkProbe(t, "startup", c.StartupProbe, srv, "/healthz", "/readyz")
				toolguards++
				checkToolguard(t, c, vars, srv)
				checkPod(t, o, c)
			}
		case "PodDisruptionBudget":
			if (o.Spec.MinAvailable == nil) == (o.Spec.MaxUnavailable == nil) {
				t.Errorf("PodDisruptionBudget %s must set one of minAvailable, maxUnavailable", o.Metadata.Name)
			}
			if sel := o.Spec.Selector.MatchLabels; len(sel) == 0 || !selects(sel, templateLabels(objs)) {
				t.Errorf("PodDisruptionBudget %s selects no pod template of its file", o.Metadata.Name)
			}
		case "HorizontalPodAutoscaler":
			ref := o.Spec.ScaleTargetRef
			if ref.Kind != "Deployment" || !hasDeployment(objs, ref.Name) {
				t.Errorf("HorizontalPodAutoscaler %s scales %s %s, not a Deployment of its file", o.Metadata.Name, ref.Kind, ref.Name)
			}
			if o.Spec.MinReplicas < 2 || o.Spec.MaxReplicas < o.Spec.MinReplicas {
				t.Errorf("HorizontalPodAutoscaler %s: replicas %d to %d", o.Metadata.Name, o.Spec.MinReplicas, o.Spec.MaxReplicas)
			}
		default:
			t.Errorf("unexpected kind %s", o.Kind)
		}
	}
	if toolguards != 1 {
		t.Errorf("%d toolguard containers, want 1", toolguards)
	}

}

func checkToolguard(t *testing.T, c container, vars map[string]bool, srv *httptest.Server) {
	t.Helper()
	// A pinned release: ":latest" or no tag changes under the deployment.
	if i := strings.LastIndex(c.Image, ":"); i < 0 || strings.Contains(c.Image[i:], "/") || c.Image[i+1:] == "latest" {
		t.Errorf("image %s is not pinned to a version", c.Image)
	}
	for _, e := range c.Env {
		if !vars[e.Name] {
			t.Errorf("env %s is not a toolguard variable", e.Name)
		}
	}
	checkProbe(t, "liveness", c.LivenessProbe, srv, "/healthz")
	checkProbe(t, "readiness", c.ReadinessProbe, srv, "/readyz")
	sc := c.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("toolguard must run as non-root with a read-only root filesystem")
	}
	if len(c.Resources.Requests) == 0 {
		t.Errorf("toolguard has no resource requests")
	}
}

// checkProbe checks that p is an HTTP GET of one of paths, which a running
// toolguard answers with 200.
func checkProbe(t *testing.T, name string, p *probe, srv *httptest.Server, paths ...string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil || !slices.Contains(paths, p.HTTPGet.Path) {
		t.Errorf("%s probe is not an HTTP GET of %s", name, strings.Join(paths, " or "))
		return
	}
	resp, err := http.Get(srv.URL + p.HTTPGet.Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s probe %s: status %d", name, p.HTTPGet.Path, resp.StatusCode)
	}
}

// checkPod checks what the pod around toolguard's container c must say for
// toolguard to drain and be scraped: a grace period longer than toolguard's
// drain delay and shutdown timeout together, and a scrape port where
// toolguard serves /metrics.
func checkPod(t *testing.T, o object, c container) {
	t.Helper()
	vars := []string{}
	for _, e := range c.Env {
		if e.Value != "" {
			vars = append(vars, e.Name+"="+e.Value)
		}
	}
	cfg, err := policy.Load(vars)
	if err != nil {
		t.Errorf("toolguard's variables do not load: %v", err)
		return
	}
	grace := 30 // Kubernetes' default
	if g := o.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if need := cfg.DrainDelay + cfg.ShutdownTimeout; time.Duration(grace)*time.Second <= need {
		t.Errorf("terminationGracePeriodSeconds %d is not longer than TOOLGUARD_DRAIN_DELAY + TOOLGUARD_SHUTDOWN_TIMEOUT (%v): requests in flight would be killed", grace, need)
	}
	scrape, ok := o.Spec.Template.Metadata.Annotations["prometheus.io/port"]
	if !ok {
		return
	}
	addr := cfg.ListenAddr
	if cfg.MetricsAddr != "" {
		addr = cfg.MetricsAddr
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port != scrape {
		t.Errorf("prometheus.io/port %s, but toolguard serves /metrics on %q", scrape, addr)
	}
	var declared bool
	for _, p := range c.Ports {
		declared = declared || strconv.Itoa(p.ContainerPort) == port
	}
	if !declared {
		t.Errorf("toolguard's container does not declare the metrics port %s", port)
	}
}

func hasDeployment(objs []object, name string) bool {
	for _, o := range objs {
		if o.Kind == "Deployment" && o.Metadata.Name == name {
			return true
		}
	}
	return false
}

func templateLabels(objs []object) []map[string]string {
	var out []map[string]string
	for _, o := range objs {
		if o.Kind == "Deployment" {
			out = append(out, o.Spec.Template.Metadata.Labels)
		}
	}
	return out
}

// selects reports whether sel matches one of the label sets.
func selects(sel map[string]string, sets []map[string]string) bool {
	for _, labels := range sets {
		ok := true
		for k, v := range sel {
			if labels[k] != v {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}
