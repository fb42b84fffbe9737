package charts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// versionRepo is a throwaway git repository holding a copy of scripts/version, so the script can
// meet tags and dirty trees without touching the project's repository.
type versionRepo struct {
	t   *testing.T
	dir string
	env []string
}

func newVersionRepo(t *testing.T) *versionRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("scripts/version needs git: %v", err)
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "version"))
	if err != nil {
		t.Fatal(err)
	}
	r := &versionRepo{t: t, dir: t.TempDir()}
	// Only what the test sets: no user or system git configuration, no version overrides.
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "GIT_TAG", "TAG", "REPO", "IMAGE", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE":
			continue
		}
		r.env = append(r.env, kv)
	}
	r.env = append(r.env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=kube-fip", "GIT_AUTHOR_EMAIL=kube-fip@example.com",
		"GIT_COMMITTER_NAME=kube-fip", "GIT_COMMITTER_EMAIL=kube-fip@example.com")
	if err := os.WriteFile(filepath.Join(r.dir, "version"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	r.git("init", "-q")
	r.commit("first")
	return r
}

func (r *versionRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit commits a change of the tracked file "file".
func (r *versionRepo) commit(msg string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "file"), []byte(msg+"\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
}

// version runs the script as make version does, with extra environment, and returns what it
// printed as a map.
func (r *versionRepo) version(env ...string) map[string]string {
	r.t.Helper()
	cmd := exec.Command("bash", "./version")
	cmd.Dir, cmd.Env = r.dir, append(append([]string{}, r.env...), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("scripts/version: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, field := range strings.Fields(string(out)) {
		if k, v, ok := strings.Cut(field, "="); ok {
			got[k] = v
		}
	}
	return got
}

// checkVersion checks the chart version, app version and image tag the script computed, and that
// the chart version is valid SemVer that is a pre-release exactly when want says so.
func checkVersion(t *testing.T, got map[string]string, chartVersion, appVersion string, preRelease bool) {
	t.Helper()
	if got["CHART_VERSION"] != chartVersion || got["APP_VERSION"] != appVersion || got["TAG"] != appVersion {
		t.Errorf("CHART_VERSION=%s APP_VERSION=%s TAG=%s; want %s, %s and the image tag equal to the app version",
			got["CHART_VERSION"], got["APP_VERSION"], got["TAG"], chartVersion, appVersion)
	}
	v, err := semver.StrictNewVersion(got["CHART_VERSION"])
	if err != nil {
		t.Fatalf("chart version %q: %v", got["CHART_VERSION"], err)
	}
	if (v.Prerelease() != "") != preRelease {
		t.Errorf("chart version %s: pre-release %q; want a pre-release: %v (Rancher hides pre-releases by default)", v, v.Prerelease(), preRelease)
	}
}

// TestVersionFromGit runs scripts/version in a scratch repository: a clean commit tagged vX.Y.Z
// (or named by GIT_TAG) is release X.Y.Z, no pre-release; an untagged commit, a commit older than
// a tag, and a dirty tree, even at a tag, are 0.0.0-dev-<commit>[-dirty] pre-releases.
func TestVersionFromGit(t *testing.T) {
	r := newVersionRepo(t)
	first := r.git("rev-parse", "--short", "HEAD")

	t.Run("untagged", func(t *testing.T) {
		checkVersion(t, r.version(), "0.0.0-dev-"+first, first, true)
	})
	t.Run("GIT_TAG", func(t *testing.T) {
		checkVersion(t, r.version("GIT_TAG=v1.2.3"), "1.2.3", "v1.2.3", false)
	})

	r.commit("second")
	second := r.git("rev-parse", "--short", "HEAD")
	r.git("tag", "v1.2.3")
	t.Run("tagged", func(t *testing.T) {
		checkVersion(t, r.version(), "1.2.3", "v1.2.3", false)
	})
	t.Run("release candidate", func(t *testing.T) {
		r.git("tag", "v1.2.4-rc.1", "HEAD")
		t.Cleanup(func() { r.git("tag", "-d", "v1.2.4-rc.1") })
		checkVersion(t, r.version(), "1.2.4-rc.1", "v1.2.4-rc.1", true)
	})
	t.Run("dirty", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(r.dir, "file"), []byte("changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.git("checkout", "-q", "--", "file") })
		checkVersion(t, r.version(), "0.0.0-dev-"+second+"-dirty", second+"-dirty", true)
		checkVersion(t, r.version("GIT_TAG=v1.2.3"), "0.0.0-dev-"+second+"-dirty", second+"-dirty", true)
	})
	t.Run("older than the tag", func(t *testing.T) {
		r.git("checkout", "-q", first)
		t.Cleanup(func() { r.git("checkout", "-q", "-") })
		checkVersion(t, r.version(), "0.0.0-dev-"+first, first, true)
	})
	t.Run("not a version tag", func(t *testing.T) {
		checkVersion(t, r.version("GIT_TAG=v1.2.3-"), "0.0.0-dev-v1.2.3-", "v1.2.3-", true)
	})
}
