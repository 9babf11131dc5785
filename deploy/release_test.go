// Package deploy holds what ships toolguard; its test keeps the release
// workflow publishing what the examples and the README promise.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestReleaseWorkflow: a version tag builds a multi-arch image, tagged with
// the version, with the version and commit baked in, and signs it.
func TestReleaseWorkflow(t *testing.T) {
	raw, err := os.ReadFile("../.github/workflows/release.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On struct {
			Push struct{ Tags []string }
		}
		Permissions map[string]string
		Jobs        map[string]struct {
			Steps []struct {
				Uses string
				Run  string
				With map[string]any
			}
		}
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	if len(wf.On.Push.Tags) == 0 || !strings.HasPrefix(wf.On.Push.Tags[0], "v") {
		t.Errorf("the workflow does not run on version tags: %v", wf.On.Push.Tags)
	}
	if wf.Permissions["id-token"] != "write" || wf.Permissions["packages"] != "write" {
		t.Errorf("permissions %v: signing needs id-token, pushing packages", wf.Permissions)
	}
	var built, signed, tested bool
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			switch {
			case strings.HasPrefix(st.Uses, "docker/build-push-action@"):
				built = true
				platforms, _ := st.With["platforms"].(string)
				args, _ := st.With["build-args"].(string)
				if !strings.Contains(platforms, "linux/amd64") || !strings.Contains(platforms, "linux/arm64") {
					t.Errorf("platforms %q: want amd64 and arm64", platforms)
				}
				if !strings.Contains(args, "VERSION=") || !strings.Contains(args, "REVISION=") {
					t.Errorf("build-args %q do not set the version and commit", args)
				}
			case strings.Contains(st.Run, "cosign sign"):
				signed = true
			case strings.Contains(st.Run, "go test"):
				tested = true
			}
		}
	}
	if !built || !signed || !tested {
		t.Errorf("built %v, signed %v, tested %v: want all", built, signed, tested)
	}
	docker, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"ARG VERSION", "ARG REVISION", "common/version.Version=${VERSION}"} {
		if !strings.Contains(string(docker), arg) {
			t.Errorf("the Dockerfile lacks %q", arg)
		}
	}
}

// TestDockerfileSetsTheVersion: the Dockerfile's -ldflags, its build
// arguments filled in, build a binary whose -version says them. (Built as
// the e2e suite builds the binary, so that the packages come from the build
// cache and only the link is new.)
func TestDockerfileSetsTheVersion(t *testing.T) {
	docker, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`-ldflags="([^"]*)"`).FindSubmatch(docker)
	if m == nil {
		t.Fatal("the Dockerfile sets no -ldflags")
	}
	flags := strings.NewReplacer("${VERSION}", "v9.8.7", "${REVISION}", "fedcba98").Replace(string(m[1]))
	bin := filepath.Join(t.TempDir(), "toolguard")
	if out, err := exec.Command("go", "build", "-ldflags="+flags, "-o", bin, "github.com/toolguard/toolguard/cmd/proxy").CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags=%q: %v\n%s", flags, err, out)
	}
	out, err := exec.Command(bin, "-version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "toolguard v9.8.7 (commit fedcba98, " + runtime.Version() + ")\n"; string(out) != want {
		t.Errorf("-version printed %q, want %q", out, want)
	}
}
