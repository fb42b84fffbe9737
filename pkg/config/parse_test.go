package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

type validCase struct {
	in   string
	want interface{}
}

type keyTest struct {
	key     string
	field   func(Config) interface{}
	extra   map[string]string // other keys the cases need, e.g. the other half of a pair
	valid   []validCase
	invalid []string
	// onInvalid, when set, is what an invalid value gives instead of the
	// previous value.
	onInvalid interface{}
}

func keyTests() []keyTest {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []keyTest{
		{
			key:   KeyLogLevel,
			field: func(c Config) interface{} { return c.LogLevel },
			valid: []validCase{
				{"Info", logrus.InfoLevel}, {"debug", logrus.DebugLevel}, {"WARN", logrus.WarnLevel},
				{"Warning", logrus.WarnLevel}, {"error", logrus.ErrorLevel}, {"Fatal", logrus.FatalLevel},
				{"PANIC", logrus.PanicLevel}, {"Trace", logrus.TraceLevel}, {" info\n", logrus.InfoLevel},
			},
			invalid: []string{"loud", "5", "inf o", "information"},
		},
		{
			key:   KeyOperateGuestClusterInterval,
			field: func(c Config) interface{} { return c.OperateGuestClusterInterval },
			valid: []validCase{
				{"1", time.Second}, {"480", 480 * time.Second}, {"86400", 24 * time.Hour}, {" 30\n", 30 * time.Second},
			},
			invalid: []string{"0", "-5", "1.5", "abc", "480s", "86401", "99999999999999999999999"},
		},
		{
			key:   KeyAddressRetention,
			field: func(c Config) interface{} { return c.AddressRetention },
			valid: []validCase{
				{"24h", 24 * time.Hour}, {"90m", 90 * time.Minute}, {"30s", 30 * time.Second}, {"1h30m", 90 * time.Minute},
				{"1.5h", 90 * time.Minute}, {"250ms", 250 * time.Millisecond},
				// Off.
				{"0", time.Duration(0)}, {"0s", time.Duration(0)}, {"0h0m", time.Duration(0)}, {"-0", time.Duration(0)},
				// A bare whole number is seconds, as for operateGuestClusterInterval.
				{"3600", time.Hour}, {"1", time.Second}, {"31536000", MaxAddressRetention},
				// The cap itself, in several spellings.
				{"8760h", MaxAddressRetention}, {"525600m", MaxAddressRetention}, {"8760h0m0s", MaxAddressRetention},
				// Blanks around the value, as block scalars leave them.
				{" 12h\n", 12 * time.Hour}, {"\t600 ", 10 * time.Minute}, {"48h\n", 48 * time.Hour},
			},
			invalid: []string{
				"soon", "-1h", "-1", "-30s", "8761h", "8760h0m1s", "31536001", "9999999999999999999h",
				"99999999999999999999", "1d", "1w", "24H", "1M", "1.5", "1h 30m", "h", "24h!", "0x10", "1e3",
			},
		},
		{
			key:   KeyServedAddressHold,
			field: func(c Config) interface{} { return c.ServedAddressHold },
			valid: []validCase{
				{"24h", 24 * time.Hour}, {"90m", 90 * time.Minute}, {"30s", 30 * time.Second},
				// Off: released at once.
				{"0", time.Duration(0)}, {"0s", time.Duration(0)},
				{"3600", time.Hour}, {"2592000", MaxServedAddressHold}, {"720h", MaxServedAddressHold},
				{" 12h\n", 12 * time.Hour},
			},
			invalid: []string{"soon", "-1h", "721h", "2592001", "1d", "24H", "1M", "1.5", "8760h"},
		},
		{
			key:     KeyMetricsPort,
			field:   func(c Config) interface{} { return c.MetricsPort },
			valid:   []validCase{{"1", 1}, {"8080", 8080}, {"65535", 65535}, {"9100\n", 9100}},
			invalid: []string{"abc", "0", "70000", "65536", "-1", "80.0", ":8080"},
		},
		{
			key:   KeyTraceIPAMData,
			field: func(c Config) interface{} { return c.TraceIPAMData },
			valid: []validCase{
				{"true", true}, {"TRUE", true}, {"tRuE", true}, {"1", true}, {"t", true},
				{"false", false}, {"False", false}, {"0", false}, {"F", false},
			},
			invalid: []string{"yes", "on", "2", "enabled"},
		},
		{
			key:     KeyKubevipUpdate,
			field:   func(c Config) interface{} { return c.KubevipUpdate },
			valid:   []validCase{{"true", true}, {"True", true}, {"false", false}, {"FALSE", false}},
			invalid: []string{"no", "off", "-1"},
		},
		{
			key:   KeyKubevipGuestInstall,
			field: func(c Config) interface{} { return c.KubevipGuestInstall },
			valid: []validCase{
				{"enabled", InstallEnabled}, {"Disabled", InstallDisabled},
				{"CLUSTERLABEL", InstallClusterLabel}, {"clusterLabel", InstallClusterLabel},
			},
			invalid: []string{"sometimes", "enable", "disable", "cluster-label", "true"},
			// A typo never widens the scope: the narrowest mode, not the previous one.
			onInvalid: InstallDisabled,
		},
		{
			key:   KeyKubevipNamespace,
			field: func(c Config) interface{} { return c.KubevipNamespace },
			valid: []validCase{
				{"kube-system", "kube-system"}, {"a", "a"}, {"ns-1", "ns-1"}, {"0ns", "0ns"}, {long(63), long(63)},
			},
			invalid: []string{"Kube-System", "-ns", "ns-", "my_ns", "a.b", long(64), "kube system"},
		},
		{
			key:   KeyKubevipChartRepoURL,
			field: func(c Config) interface{} { return [2]string{c.Kubevip.RepoURL, c.KubevipCloudProvider.RepoURL} },
			valid: []validCase{
				{"https://kube-vip.io/helm-charts", [2]string{"https://kube-vip.io/helm-charts", "https://kube-vip.io/helm-charts"}},
				{"http://charts.local:8080/x/", [2]string{"http://charts.local:8080/x/", "http://charts.local:8080/x/"}},
				{"HTTPS://Example.com", [2]string{"HTTPS://Example.com", "HTTPS://Example.com"}},
			},
			invalid: []string{"ftp://x", "not a url", "https://", "/relative/path", "https:///nohost", "kube-vip.io/helm-charts", "http://a b",
				"https://user:pass@charts.example.com/kv", "https://token@charts.example.com", "https://charts.example.com/kv?token=x",
				"https://charts.example.com/kv#frag"},
		},
	}

	charts := []struct {
		prefix string
		chart  func(Config) Chart
	}{
		{"kubevip", func(c Config) Chart { return c.Kubevip }},
		{"kubevipCloudProvider", func(c Config) Chart { return c.KubevipCloudProvider }},
	}
	for _, ch := range charts {
		chart := ch.chart
		refKey, versionKey := ch.prefix+"ChartRef", ch.prefix+"ChartVersion"
		tests = append(tests,
			keyTest{
				key:   ch.prefix + "ReleaseName",
				field: func(c Config) interface{} { return chart(c).ReleaseName },
				valid: []validCase{
					{"kube-vip", "kube-vip"}, {"kv.1", "kv.1"}, {"x", "x"}, {long(53), long(53)},
				},
				invalid: []string{long(54), "Kube-Vip", "kube_vip", "-kv", "kv-", "kv..1"},
			},
			keyTest{
				key:   refKey,
				field: func(c Config) interface{} { return chart(c).Ref },
				extra: map[string]string{versionKey: "1.0.0"},
				valid: []validCase{
					{"oci://ghcr.io/kube-vip/charts/kube-vip", "oci://ghcr.io/kube-vip/charts/kube-vip"},
					{"oci://localhost:5000/kv\n", "oci://localhost:5000/kv"},
				},
				invalid: []string{
					"docker.io/foo", "oci://", "oci:///path", "oci://ghcr.io", "oci://ghcr.io/", "https://ghcr.io/x",
					"OCI://ghcr.io/x", "oci://ghcr.io/x?tag=1", "oci://user:pw@ghcr.io/x",
				},
			},
			keyTest{
				key:   versionKey,
				field: func(c Config) interface{} { return chart(c).Version },
				extra: map[string]string{refKey: "oci://ghcr.io/kube-vip/charts/x"},
				valid: []validCase{
					{"0.8.0", "0.8.0"}, {"v0.8.0", "v0.8.0"}, {"1.2", "1.2"}, {"7", "7"},
					{"v1.2.3-rc.1+build.5", "v1.2.3-rc.1+build.5"},
				},
				invalid: []string{"latest", "^1.2.0", ">=1", "1.2.3.4", "https://x", "v", "1.2.3 beta", "1.2.3-"},
			},
			keyTest{
				key:   ch.prefix + "ChartValues",
				field: func(c Config) interface{} { return [2]interface{}{chart(c).Values, chart(c).ValuesYAML} },
				valid: []validCase{
					{"image:\n  tag: x\n", [2]interface{}{map[string]interface{}{"image": map[string]interface{}{"tag": "x"}}, "image:\n  tag: x\n"}},
					{"{}", [2]interface{}{map[string]interface{}{}, "{}"}},
					{"# nothing to override\n", [2]interface{}{map[string]interface{}{}, "# nothing to override\n"}},
					{"a: 1\nb: [x, z]", [2]interface{}{map[string]interface{}{"a": float64(1), "b": []interface{}{"x", "z"}}, "a: 1\nb: [x, z]"}},
				},
				invalid: []string{"- a\n- b", "just a string", "42", "a: b\n c: d", "a: [1, 2", "a:\n\t- b", "x: *anchor", "a: .nan"},
			},
		)
	}
	return tests
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	prev := previousConfig(t)
	def := Default()
	for _, tt := range keyTests() {
		data := func(v string) map[string]string {
			d := map[string]string{}
			for k, x := range tt.extra {
				d[k] = x
			}
			d[tt.key] = v
			return d
		}
		sensitive := strings.HasSuffix(tt.key, "ChartValues")
		t.Run(tt.key, func(t *testing.T) {
			for _, vc := range tt.valid {
				got, problems := Parse(data(vc.in), prev)
				if len(problems) != 0 {
					t.Errorf("%q: unexpected problems %v", vc.in, problems)
				}
				if f := tt.field(got); !reflect.DeepEqual(f, vc.want) {
					t.Errorf("%q: got %#v, want %#v", vc.in, f, vc.want)
				}
			}
			for _, in := range tt.invalid {
				got, problems := Parse(data(in), prev)
				if len(problems) != 1 || problems[0].Key != tt.key || problems[0].Warning || problems[0].Reason != ProblemInvalidValue {
					t.Errorf("%q: want one problem for %s, got %v", in, tt.key, problems)
					continue
				}
				p := problems[0]
				want := tt.field(prev)
				if tt.onInvalid != nil {
					want = tt.onInvalid
				}
				if f := tt.field(got); !reflect.DeepEqual(f, want) {
					t.Errorf("%q: got %#v, want %#v", in, f, want)
				}
				if p.Fallback == "" {
					t.Errorf("%q: problem does not say what applies instead: %v", in, p)
				}
				if sensitive {
					if p.Value != "" || !strings.Contains(p.Error(), "not shown") {
						t.Errorf("%q: values problem must not echo the value: %v", in, p)
					}
				} else if want := echo(in); p.Value != want || !strings.Contains(p.Error(), fmt.Sprintf("invalid value %q: ", want)) {
					t.Errorf("%q: problem %q does not quote the value", in, p.Error())
				}
				if !strings.HasPrefix(p.Error(), fmt.Sprintf("kube-fip-config key %q: ", tt.key)) {
					t.Errorf("%q: problem %q does not name the key", in, p.Error())
				}
				checkValid(t, got)
			}
			for _, in := range []string{"", " \n\t"} {
				got, _ := Parse(data(in), prev)
				if f, want := tt.field(got), tt.field(def); !reflect.DeepEqual(f, want) {
					t.Errorf("empty %q: got %#v, want default %#v", in, f, want)
				}
			}
			got, _ := Parse(tt.extra, prev)
			if f, want := tt.field(got), tt.field(def); !reflect.DeepEqual(f, want) {
				t.Errorf("absent: got %#v, want default %#v", f, want)
			}
		})
	}
}

func TestKeyTestsCoverEveryKey(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, tt := range keyTests() {
		covered[tt.key] = true
	}
	for _, k := range Keys() {
		if !covered[k] {
			t.Errorf("no table test for key %s", k)
		}
	}
}

func TestParseAbsentKeysRevertToDefault(t *testing.T) {
	t.Parallel()
	got, problems := Parse(nil, previousConfig(t))
	if len(problems) != 0 || !got.Equal(Default()) {
		t.Errorf("Parse(nil, previous) = %v, %v; want Default()", got, problems)
	}
	// Removing one key reverts just that key.
	data := previousData()
	delete(data, KeyMetricsPort)
	got, _ = Parse(data, previousConfig(t))
	if got.MetricsPort != 8080 || got.KubevipNamespace != "kube-vip-prev" {
		t.Errorf("after removing metricsPort: port %d, namespace %q", got.MetricsPort, got.KubevipNamespace)
	}
}

func TestParseInvalidPreviousFallsBackToDefault(t *testing.T) {
	t.Parallel()
	bad := map[string]string{}
	for _, tt := range keyTests() {
		bad[tt.key] = tt.invalid[0]
	}
	for name, prev := range map[string]Config{"zero": {}, "default": Default()} {
		got, problems := Parse(bad, prev)
		want := Default()
		want.KubevipGuestInstall = InstallDisabled // the narrowest mode, never the default
		if name == "zero" {
			want.LogLevel = logrus.PanicLevel // the zero Level is a valid level
			want.AddressRetention = 0         // and the zero retention (off) a valid retention
			want.ServedAddressHold = 0        // as is the zero hold
		}
		if !got.Equal(want) {
			t.Errorf("%s previous: got %v, want Default()", name, got)
		}
		if len(problems) != len(Keys()) {
			t.Errorf("%s previous: %d problems, want %d: %v", name, len(problems), len(Keys()), problemKeys(problems))
		}
	}
}

func TestParseDoesNotShareValuesWithPrevious(t *testing.T) {
	t.Parallel()
	prev := previousConfig(t)
	got, _ := Parse(map[string]string{KeyKubevipChartValues: "- broken"}, prev)
	got.Kubevip.Values["image"] = "changed"
	if reflect.DeepEqual(prev.Kubevip.Values["image"], "changed") {
		t.Error("Parse returned the previous Values map itself")
	}
	d := Default()
	d.Kubevip.Values["image"] = "changed"
	if reflect.DeepEqual(Default().Kubevip.Values["image"], "changed") {
		t.Error("Default shares its Values map between calls")
	}
}

// TestAddressRetention: an invalid addressRetention is reported with the accepted forms and limits,
// and the previous retention stays in force, including "off"; a removed or blank key reverts to
// the default of one day.
func TestAddressRetention(t *testing.T) {
	t.Parallel()
	_, problems := Parse(map[string]string{KeyAddressRetention: " 8761h\n"}, Default())
	want := `kube-fip-config key "addressRetention": invalid value "8761h": must be a duration such as 24h, 90m or 30s, ` +
		`or a whole number of seconds, from 0 (no retention) to 8760h (one year)`
	if len(problems) != 1 || problems[0].Error() != want || problems[0].Fallback != "the previous value stays in force" {
		t.Fatalf("got %v, want %q", problems, want)
	}

	off, problems := Parse(map[string]string{KeyAddressRetention: "0"}, Default())
	if len(problems) != 0 || off.AddressRetention != 0 {
		t.Fatalf("0: retention %v, problems %v", off.AddressRetention, problems)
	}
	steps := []struct {
		name string
		data map[string]string
		prev Config
		want time.Duration
	}{
		{"first start, invalid", map[string]string{KeyAddressRetention: "-1h"}, Default(), DefaultAddressRetention},
		{"off, then invalid", map[string]string{KeyAddressRetention: "-1h"}, off, 0},
		{"off, then too large", map[string]string{KeyAddressRetention: "31536001"}, off, 0},
		{"90m, then invalid", map[string]string{KeyAddressRetention: "1d"}, previousConfig(t), 90 * time.Minute},
		{"off, then removed", map[string]string{}, off, DefaultAddressRetention},
		{"off, then blank", map[string]string{KeyAddressRetention: " \n"}, off, DefaultAddressRetention},
		{"90m, then 36h", map[string]string{KeyAddressRetention: "36h"}, previousConfig(t), 36 * time.Hour},
	}
	for _, s := range steps {
		got, _ := Parse(s.data, s.prev)
		if got.AddressRetention != s.want {
			t.Errorf("%s: retention %v, want %v", s.name, got.AddressRetention, s.want)
		}
	}
}

// TestValuesWithARepeatedKeyAreInvalid: a key given twice in one mapping of chart values is an
// invalid value, saying where, rather than read as its last occurrence.
func TestValuesWithARepeatedKeyAreInvalid(t *testing.T) {
	t.Parallel()
	_, problems := Parse(map[string]string{KeyKubevipChartValues: "env:\n  vip_interface: eth0\n  vip_interface: S3CRET\n"}, Default())
	if len(problems) != 1 || problems[0].Reason != ProblemInvalidValue || !strings.Contains(problems[0].Message, "line 3: a key is given twice") ||
		strings.Contains(problems[0].Error(), "S3CRET") || strings.Contains(problems[0].Error(), "vip_interface") {
		t.Errorf("problems %+v", problems)
	}
}
