package kubevipenv

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) []EnvVar {
		var out []EnvVar
		for i := 0; i < len(kv); i += 2 {
			out = append(out, EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	cases := []struct {
		name, image string
		env         []EnvVar
		want        []EnvVar // nil with refuse
		generation  string
		translated  int
		ignored     []string
		refuse      string
	}{
		{"v1.0.0 reads the chart's values", "ghcr.io/kube-vip/kube-vip:v1.0.0",
			env("vip_subnet", "32", "svc_enable", "true", "lb_port", "6443", "vip_interface", "enp1s0"),
			env("vip_subnet", "32", "svc_enable", "true", "lb_port", "6443", "vip_interface", "enp1s0"), "v0.9 and later", 0, nil, ""},
		{"v1.0.0 gets the old form without slashes", "ghcr.io/kube-vip/kube-vip:v1.0.0",
			env("vip_subnet", "/32"), env("vip_subnet", "32"), "v0.9 and later", 1, nil, ""},
		{"v1.0.0 reads a pair", "ghcr.io/kube-vip/kube-vip:v1.0.4@sha256:" + strings.Repeat("a", 64),
			env("vip_subnet", "32,128"), env("vip_subnet", "32,128"), "v0.9 and later", 0, nil, ""},
		{"v1.0.0 no longer reads vip_cidr", "ghcr.io/kube-vip/kube-vip:v1.0.0",
			env("vip_cidr", "32"), env("vip_cidr", "32"), "v0.9 and later", 0, []string{"vip_cidr"}, ""},
		{"v0.6.4 drops the chart's 32", "plndr/kube-vip:v0.6.4",
			env("vip_subnet", "32", "vip_arp", "true"), env("vip_arp", "true"), "v0.6 to v0.8", 1, nil, ""},
		{"v0.8.9 drops 32,128", "plndr/kube-vip:v0.8.9",
			env("vip_subnet", "32,128"), nil, "v0.6 to v0.8", 1, nil, ""},
		{"v0.6.4 keeps its own form", "plndr/kube-vip:v0.6.4",
			env("vip_subnet", "/32"), env("vip_subnet", "/32"), "v0.6 to v0.8", 0, nil, ""},
		{"v0.6.4 does not read vip_nodename", "plndr/kube-vip:v0.6.4",
			[]EnvVar{{Name: "vip_nodename", FromRef: true}}, []EnvVar{{Name: "vip_nodename", FromRef: true}}, "v0.6 to v0.8", 0, []string{"vip_nodename"}, ""},
		{"an empty value is unset", "plndr/kube-vip:v0.6.4", env("svc_enable", ""), env("svc_enable", ""), "v0.6 to v0.8", 0, nil, ""},
		{"a bad bool", "ghcr.io/kube-vip/kube-vip:v1.0.0", env("vip_arp", "yes"), nil, "", 0, nil, `env vip_arp: it must be true or false`},
		{"a bad EnvJSON", "ghcr.io/kube-vip/kube-vip:v1.0.0", env("vip_leaseannotations", "{"), nil, "", 0, nil, "a JSON object of strings"},
		{"a subnet too wide", "ghcr.io/kube-vip/kube-vip:v1.0.0", env("vip_subnet", "33"), nil, "", 0, nil, "<IPv4 bits>,<IPv6 bits>"},
		{"a subnet v0.6.4 appends", "plndr/kube-vip:v0.6.4", env("vip_subnet", "24"), nil, "", 0, nil, "appends vip_subnet"},
		{"no tag", "plndr/kube-vip", nil, nil, "", 0, nil, "has no tag"},
		{"a registry port is no tag", "localhost:5000/kube-vip", nil, nil, "", 0, nil, "has no tag"},
		{"latest", "plndr/kube-vip:latest", nil, nil, "", 0, nil, "is not a kube-vip release"},
		{"too old", "plndr/kube-vip:v0.5.0", nil, nil, "", 0, nil, "older than v0.6.0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Judge(c.image, c.env)
			if c.refuse != "" {
				var r *guestchart.Refusal
				if !errors.As(err, &r) || !strings.Contains(r.Message, c.refuse) {
					t.Fatalf("Judge = %+v, %v; want a refusal saying %q", d, err, c.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Generation != c.generation || len(d.Translated) != c.translated || !reflect.DeepEqual(d.Ignored, c.ignored) {
				t.Errorf("generation %q, translated %q, ignored %q; want %q, %d translations, %q", d.Generation, d.Translated, d.Ignored, c.generation, c.translated, c.ignored)
			}
			if !reflect.DeepEqual(d.Env, c.want) {
				t.Errorf("env %+v; want %+v", d.Env, c.want)
			}
		})
	}
}

// FuzzJudge: nothing an image name or a value holds makes Judge panic, and a variable it keeps
// is one it was given.
func FuzzJudge(f *testing.F) {
	f.Add("plndr/kube-vip:v0.6.4", "vip_subnet", "32")
	f.Add("ghcr.io/kube-vip/kube-vip:v1.0.0", "vip_leaseannotations", `{"a":"b"}`)
	f.Fuzz(func(t *testing.T, image, name, value string) {
		d, err := Judge(image, []EnvVar{{Name: name, Value: value}})
		if err != nil {
			return
		}
		for _, e := range d.Env {
			if e.Name != name {
				t.Fatalf("Judge made up %q", e.Name)
			}
		}
	})
}
