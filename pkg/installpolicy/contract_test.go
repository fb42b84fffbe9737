package installpolicy

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubefip/kube-fip-operator/package/charts"
	"github.com/kubefip/kube-fip-operator/pkg/config"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/chartvalues"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/render"
	"github.com/kubefip/kube-fip-operator/test/rig/chartrepo"
)

// contractAddr is a floating IP the kube-vip under contract is asked to serve.
const contractAddr = "198.18.0.1"

// imageContract is how one kube-vip release reads the variables the kube-vip chart renders, as
// read from its source at the tag named, written here apart from the generation tables so that the
// two can disagree. Each function returns what kube-vip makes of a value, or the error it stops
// the service with.
type imageContract struct {
	tag, source string
	// read lists, per variable the chart may render, how this release parses it; a variable not
	// listed is one this release does not read.
	read map[string]func(string) error
}

func parseBool(v string) error { _, err := strconv.ParseBool(v); return err }
func parsePort(v string) error { _, err := strconv.ParseUint(v, 10, 16); return err }
func readText(string) error    { return nil }

// hostAddress is what a service address must become: the FloatingIP as a host address.
func hostAddress(cidr string) error {
	ip, ipnet, err := net.ParseCIDR(cidr)
	if err != nil {
		return err
	}
	if ones, bits := ipnet.Mask.Size(); !ip.Equal(net.ParseIP(contractAddr)) || ones != bits {
		return fmt.Errorf("kube-vip would bind %s, not the host address %s", cidr, contractAddr)
	}
	return nil
}

// readAlike adds to one release's table the variables chart 0.9.9 renders that v0.6.4 and v1.0.0
// read the same way (text, or strconv.ParseBool), as both sources show.
func readAlike(own map[string]func(string) error) map[string]func(string) error {
	for _, name := range []string{"vip_interface", "vip_address", "prometheus_server"} {
		own[name] = readText
	}
	for _, name := range []string{"vip_arp", "vip_leaderelection", "cp_enable", "svc_enable", "svc_election", "lb_enable"} {
		own[name] = parseBool
	}
	return own
}

// v064 is the original operator's default image. kube-vip/kube-vip v0.6.4,
// pkg/kubevip/config_environment.go (ParseEnvironment) and pkg/vip/address.go (NewConfig): with
// vip_subnet set, netlink.ParseAddr(address + subnet), else the address's full mask.
var v064 = imageContract{tag: "v0.6.4", source: "kube-vip/kube-vip v0.6.4 pkg/kubevip/config_environment.go, pkg/vip/address.go",
	read: readAlike(map[string]func(string) error{
		"vip_subnet": func(v string) error { return hostAddress(contractAddr + v) },
		"vip_cidr":   readText, // BGP only
		"lb_port":    func(v string) error { _, err := strconv.ParseInt(v, 10, 32); return err },
	})}

// v100 is the default image. kube-vip/kube-vip v1.0.0, pkg/kubevip/config_environment.go and
// pkg/vip/address.go (NewConfig: utils.FormatIPWithSubnetMask(address, first of vip_subnet split
// on ","), "32" when unset). vip_cidr is no longer read.
var v100 = imageContract{tag: "v1.0.0", source: "kube-vip/kube-vip v1.0.0 pkg/kubevip/config_environment.go, pkg/vip/address.go, pkg/utils/utils.go",
	read: readAlike(map[string]func(string) error{
		"vip_subnet": func(v string) error {
			return hostAddress(contractAddr + "/" + strings.Split(v, ",")[0])
		},
		"vip_nodename": readText,
		"lb_port":      parsePort,
	})}

// check returns every variable of the rendered kube-vip container this release would not read
// as the chart means it.
func (c imageContract) check(objs []*unstructured.Unstructured) []string {
	var problems []string
	found := false
	for _, o := range objs {
		if o.GetKind() != "DaemonSet" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, raw := range containers {
			ctr, _ := raw.(map[string]interface{})
			image, _ := ctr["image"].(string)
			if repo, _ := splitRef(image); !strings.HasSuffix(repo, "/kube-vip") {
				continue
			}
			found = true
			if _, tag := splitRef(image); tag != c.tag {
				problems = append(problems, fmt.Sprintf("the rendered image is %s, not %s", image, c.tag))
			}
			env, _ := ctr["env"].([]interface{})
			for _, e := range env {
				m, _ := e.(map[string]interface{})
				name, _ := m["name"].(string)
				value, _ := m["value"].(string)
				read, ok := c.read[name]
				switch {
				case !ok:
					problems = append(problems, fmt.Sprintf("%s does not read %s", c.tag, name))
				case value == "":
					// unset for every release
				default:
					if err := read(value); err != nil {
						problems = append(problems, fmt.Sprintf("%s=%q: %v", name, value, err))
					}
				}
			}
		}
	}
	if !found {
		problems = append(problems, "no kube-vip container was rendered")
	}
	return problems
}

// renderKubevip renders the kube-vip chart stand-in (kube-vip/helm-charts kube-vip 0.9.9) with the
// values the operator installs for values: as the policy approves it when judged, else as Helm
// alone would render them.
func renderKubevip(t *testing.T, values string, judged bool) ([]*unstructured.Unstructured, error) {
	t.Helper()
	cfg, problems := config.Parse(map[string]string{config.KeyKubevipChartValues: values}, config.Default())
	if len(problems) > 0 {
		t.Fatalf("values %q: %v", values, problems)
	}
	plan, err := Default().PlanKubevip(cfg)
	if err != nil {
		return nil, err
	}
	ch := chartrepo.KubevipChart(config.DefaultKubevipChartVersion)
	rel := render.Target{Name: cfg.Kubevip.ReleaseName, Namespace: cfg.KubevipNamespace, Revision: 1}
	if !judged {
		return charts.Render(ch, charts.RenderOptions{ReleaseName: rel.Name, Namespace: rel.Namespace, Values: plan.Values.Map})
	}
	a, err := plan.Approve(ch, rel)
	if err != nil {
		return nil, err
	}
	return charts.Render(ch, charts.RenderOptions{ReleaseName: rel.Name, Namespace: rel.Namespace, Values: plan.Values.Map,
		PostRenderer: manifestOnly(a.Manifest)})
}

// manifestOnly is the operator's post-renderer: Helm applies the approved manifest.
type manifestOnly string

func (m manifestOnly) Run(*bytes.Buffer) (*bytes.Buffer, error) {
	return bytes.NewBufferString(string(m)), nil
}

// TestKubevipImageContracts: what chart 0.9.9 renders, as the operator installs it, is read by
// each image the way the chart means it. The default values serve with v1.0.0 as they are; the
// original operator's default values (image v0.6.4, config.vip_interface), which no build here can
// run, serve only with the operator's translation: without it, v0.6.4 makes "198.18.0.132" of
// vip_subnet "32", and the contract says so.
func TestKubevipImageContracts(t *testing.T) {
	t.Parallel()
	original := "config:\n  vip_interface: enp1s0\nimage:\n  repository: plndr/kube-vip\n  tag: v0.6.4\nenv:\n  prometheus_server: ':8080'\nnodeSelector:\n  node-role.kubernetes.io/master: 'true'\n"
	cases := []struct {
		name     string
		values   string
		contract imageContract
	}{
		{"default values, v1.0.0", config.DefaultKubevipChartValues, v100},
		{"the original's default values, v0.6.4", original, v064},
		{"v0.6.4 with vip_subnet in its own form", strings.Replace(original, "env:\n", "env:\n  vip_subnet: /32\n", 1), v064},
		{"v1.0.0 with vip_subnet in the old form", strings.Replace(config.DefaultKubevipChartValues, "env:\n", "env:\n  vip_subnet: /32\n", 1), v100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs, err := renderKubevip(t, c.values, true)
			if err != nil {
				t.Fatal(err)
			}
			if problems := c.contract.check(objs); len(problems) > 0 {
				t.Errorf("as installed, against %s: %s", c.contract.source, strings.Join(problems, "; "))
			}
		})
	}

	// Without the judgement, the original's values on chart 0.9.9 break v0.6.4: the contract fails.
	objs, err := renderKubevip(t, original, false)
	if err != nil {
		t.Fatal(err)
	}
	problems := v064.check(objs)
	if len(problems) != 1 || !strings.Contains(problems[0], `vip_subnet="32"`) || !strings.Contains(problems[0], "198.18.0.132") {
		t.Errorf("chart 0.9.9 as rendered, against v0.6.4: %q; want the one problem vip_subnet=\"32\"", problems)
	}
}

// TestKubevipRefusedBeforeInstall: values no kube-vip of the image can read are refused before
// anything is installed: by the values schema when the form alone is wrong, naming the key, and by
// the render's judge when the image reads the form otherwise, naming the DaemonSet and the
// variable.
func TestKubevipRefusedBeforeInstall(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, values, reason, want string }{
		{"a bool that is not one", "env:\n  svc_election: 'yes please'\n", guestchart.ReasonValuesNotAllowed, "env.svc_election must be true or false"},
		{"a subnet v0.6.4 would append", "image:\n  repository: plndr/kube-vip\n  tag: v0.6.4\nenv:\n  vip_subnet: '24'\n", guestchart.ReasonKubevipRefused, "appends vip_subnet"},
		{"a variable of a mode the deployment does not allow", "env:\n  lb_port: '6443'\n", guestchart.ReasonValuesNotAllowed, "controlplane mode"},
		{"a tag that is no release", "image:\n  repository: ghcr.io/kube-vip/kube-vip\n  tag: latest\n", guestchart.ReasonValuesNotAllowed, "image.tag must be a release tag"},
		{"a release older than any read", "image:\n  repository: plndr/kube-vip\n  tag: v0.5.12\n", guestchart.ReasonValuesNotAllowed, "older than v0.6.0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderKubevip(t, c.values, true)
			var refused *guestchart.Refusal
			if !errors.As(err, &refused) || refused.Reason != c.reason {
				t.Fatalf("rendered with %q: %v; want a refusal %s", c.values, err, c.reason)
			}
			if !strings.Contains(refused.Message, c.want) {
				t.Errorf("refusal %q; want it to say %q", refused.Message, c.want)
			}
			if c.reason == guestchart.ReasonKubevipRefused && !strings.Contains(refused.Message, "DaemonSet kube-system/"+chartvalues.KubevipNameOverride) {
				t.Errorf("refusal %q; want it to name the DaemonSet", refused.Message)
			}
		})
	}
}

// splitRef splits an image reference, as a pod spec holds it, into repository and tag.
func splitRef(ref string) (repo, tag string) {
	name, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[:i], name[i+1:]
	}
	return name, ""
}
