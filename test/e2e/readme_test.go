package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/kubefip/kube-fip-operator/pkg/admission"
	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/test/rig"
	"github.com/kubefip/kube-fip-operator/test/rig/externaldns"
	"github.com/kubefip/kube-fip-operator/test/rig/rancher"
)

// yoursMarker ends a line of the README's first FloatingIP whose value a reader replaces with
// their own; every other value is applied as the README writes it.
const yoursMarker = "# yours"

// suiteRange is the range the suite gives the guests' network (installCharts), which the README's
// first range replaces for the length of the test.
const suiteRange = "e2e-guests"

// readmeFirstFloatingIP is the README's "Your first FloatingIP" as a reader finds it: its YAML
// documents and its shell commands, in the order the README shows them.
type readmeFirstFloatingIP struct {
	documents []string
	commands  []string
}

// readReadmeFirstFloatingIP reads the fenced yaml and sh blocks of the README's first FloatingIP,
// each taken out of the indentation of its list item.
func readReadmeFirstFloatingIP(t *testing.T) readmeFirstFloatingIP {
	t.Helper()
	section, err := rig.ReadmeSection("## Your first FloatingIP")
	rig.Must(t, err)
	var out readmeFirstFloatingIP
	var body []string
	kind, indent := "", ""
	for _, line := range strings.Split(section, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case kind != "" && trimmed == "```":
			text := strings.Join(body, "\n")
			switch kind {
			case "yaml":
				out.documents = append(out.documents, text)
			case "sh":
				out.commands = append(out.commands, body...)
			}
			kind, body = "", nil
		case kind != "":
			body = append(body, strings.TrimPrefix(line, indent))
		case strings.HasPrefix(trimmed, "```"):
			kind, indent = strings.TrimPrefix(trimmed, "```"), line[:len(line)-len(strings.TrimLeft(line, " "))]
		}
	}
	if len(out.documents) != 2 || len(out.commands) == 0 {
		t.Fatalf("the README's first FloatingIP has %d YAML documents and %d commands; want the range, the Service and the label command",
			len(out.documents), len(out.commands))
	}
	return out
}

// yoursLine is a "key: value  # yours: ..." line of a YAML document.
var yoursLine = regexp.MustCompile(`^(\s*(?:-\s+)?)([A-Za-z0-9_.-]+):\s*(\S+)(\s+` + yoursMarker + `.*)$`)

// fill replaces, in the README's YAML documents, the value of every line marked yours with the
// suite's value for its key, and nothing else. A marked key the suite has no value for, or a value
// the README marks nowhere, fails the test: the README and the suite stay in step.
func fill(t *testing.T, documents []string, yours map[string]string) []string {
	t.Helper()
	used := map[string]bool{}
	var out []string
	for _, doc := range documents {
		lines := strings.Split(doc, "\n")
		for i, line := range lines {
			if !strings.Contains(line, yoursMarker) {
				continue
			}
			m := yoursLine.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("the README marks %q as yours, but it is no key: value line", line)
			}
			value, ok := yours[m[2]]
			if !ok {
				t.Fatalf("the README marks %s: %s as yours, and the suite has no value of its own for it", m[2], m[3])
			}
			used[m[2]] = true
			lines[i] = m[1] + m[2] + ": " + value + m[4]
		}
		out = append(out, strings.Join(lines, "\n"))
	}
	for key := range yours {
		if !used[key] {
			t.Errorf("the README does not mark %s as yours", key)
		}
	}
	return out
}

// labelCommand is the README's kubectl label of a provisioning cluster.
var labelCommand = regexp.MustCompile(`^kubectl -n (\S+) label (\S+) (\S+) ([A-Za-z0-9./_-]+)=(\S+)\s+` + yoursMarker)

// applyAsKubectl creates or updates obj in the cluster of cfg as `kubectl apply --server-side` does:
// its kind mapped to a resource through the cluster's discovery, the object sent whole, as written.
func applyAsKubectl(ctx context.Context, cfg *rest.Config, obj *unstructured.Unstructured) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	gvk := obj.GroupVersionKind()
	mapping, err := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)).RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("mapping %s: %w", gvk, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var resource dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		resource = dyn.Resource(mapping.Resource).Namespace(ns)
	}
	_, err = resource.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "kubectl", Force: true})
	return err
}

// freshGuestNetwork takes away every range of the guest's Harvester cluster and network, and the
// guest's FloatingIPs, so that the guest is as a new administrator finds it: a Harvester guest
// cluster without a range. The ranges go with allow-orphans, the FloatingIPs then give their
// addresses back, and the ranges' deletions complete.
func (s *suite) freshGuestNetwork(t *testing.T, harvester, network string) {
	t.Helper()
	list, err := s.fips.FloatingIPRange().List(metav1.ListOptions{})
	rig.Must(t, err)
	var ranges []string
	for _, r := range list.Items {
		if r.Annotations[v1.AnnotationHarvesterClusterName] != harvester || r.Annotations[v1.AnnotationHarvesterNetworkName] != network {
			continue
		}
		ranges = append(ranges, r.Name)
		if r.DeletionTimestamp == nil {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				fresh, err := s.fips.FloatingIPRange().Get(r.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				fresh.Annotations[admission.AnnotationAllowOrphans] = "true"
				_, err = s.fips.FloatingIPRange().Update(fresh)
				return err
			})
			if err != nil {
				t.Fatalf("letting range %s go with its addresses: %v", r.Name, err)
			}
		}
		if err := s.fips.FloatingIPRange().Delete(r.Name, nil); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	rig.Eventually(t, 2*time.Minute, fmt.Sprintf("ranges %v and the guest's FloatingIPs gone", ranges), func() bool {
		fips, err := s.fips.FloatingIP().List(guestID, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, f := range fips.Items {
			if f.DeletionTimestamp == nil {
				_ = s.fips.FloatingIP().Delete(guestID, f.Name, nil)
			}
		}
		if len(fips.Items) > 0 {
			return false
		}
		for _, name := range ranges {
			if _, err := s.fips.FloatingIPRange().Get(name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
}

// freeBlock is the first /29 of the guest node's /24 that holds none of the network's machines
// (host, node, client) and no address of taken.
func (s *suite) freeBlock(t *testing.T, taken netip.Prefix) netip.Prefix {
	t.Helper()
	network := netip.PrefixFrom(s.guest.NodeAddr, 24).Masked()
	for a := network.Addr(); network.Contains(a); {
		p := netip.PrefixFrom(a, 29)
		if !p.Overlaps(taken) && !p.Contains(s.guest.HostAddr) && !p.Contains(s.guest.NodeAddr) && !p.Contains(s.guest.ClientAddr) {
			return p
		}
		for i := 0; i < 8; i++ {
			a = a.Next()
		}
	}
	t.Fatalf("no free /29 in %s beside %s", network, taken)
	return netip.Prefix{}
}

// deleteService deletes a Service of the guest and waits until it is gone.
func (s *suite) deleteService(t *testing.T, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	if err := s.guestKube.CoreV1().Services(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	rig.Eventually(t, time.Minute, "Service "+namespace+"/"+name+" gone", func() bool {
		_, err := s.guestKube.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// TestReadmeFirstFloatingIP: the README's first screen, followed literally by a new administrator in
// this suite's world, ends in a LoadBalancer Service holding the FloatingIP. The guest starts with
// no range (the suite's own is taken away for the test) and no other LoadBalancer Service; the
// README's range and Service are applied as the README writes them, with only the values it marks
// yours filled in from the suite's world (its Harvester cluster, its network, free addresses of the
// guest node's network, the pods of the echo backend); its label command is run as written. Then:
// the guest's FloatingIP comes from the README's range, Configured and Idle as the README shows it;
// the README's Service gets the address in its status.loadBalancer.ingress; the FloatingIP's Served
// condition says Served by that Service and it is Ready; a client on the guest's network reaches
// the Service at the address; and, with the README's patch giving the range a zone, the real
// external-dns publishes the guest's name and BIND answers it with the address. Afterwards the
// suite's range is back.
func TestReadmeFirstFloatingIP(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	readme := readReadmeFirstFloatingIP(t)

	// The suite's world: the guest's Harvester cluster and network as its range names them, and a
	// /29 of the guest node's network outside that range.
	own, err := s.fips.FloatingIPRange().Get(suiteRange, metav1.GetOptions{})
	rig.Must(t, err)
	harvester, network := own.Annotations[v1.AnnotationHarvesterClusterName], own.Annotations[v1.AnnotationHarvesterNetworkName]
	ownPrefix := netip.MustParsePrefix(own.Spec.IPRange)
	free := s.freeBlock(t, ownPrefix)
	t.Logf("the guest's network %s of Harvester cluster %s; the README's range gets %s (the suite's has %s)", network, harvester, free, ownPrefix)

	documents := fill(t, readme.documents, map[string]string{
		v1.AnnotationHarvesterClusterName: harvester,
		v1.AnnotationHarvesterNetworkName: network,
		"iprange":                         free.String(),
		"app":                             "echo", // the echo backend's pods, labelled app=echo
		"targetPort":                      "8080", // where the echo backend listens
	})
	var fipRange, service *unstructured.Unstructured
	for _, doc := range documents {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatalf("the README's YAML, filled in: %v\n%s", err, doc)
		}
		switch obj.GetKind() {
		case "FloatingIPRange":
			fipRange = obj
		case "Service":
			service = obj
		}
	}
	if fipRange == nil || service == nil {
		t.Fatal("the README's first FloatingIP shows no FloatingIPRange or no Service")
	}

	// The guest as a new administrator finds it: the echo backend runs, no LoadBalancer Service asks
	// for an address (the one the suite's tests make would take the guest's only address), and no
	// range serves the guest's network.
	s.echoService(t)
	s.deleteService(t, "default", "echo")
	s.freshGuestNetwork(t, harvester, network)
	t.Cleanup(func() {
		// The suite's world again: the README's Service and range gone, the suite's range back, and
		// the guest's FloatingIP from it.
		s.deleteService(t, service.GetNamespace(), service.GetName())
		s.freshGuestNetwork(t, harvester, network)
		_, err := s.fips.FloatingIPRange().Create(&v1.FloatingIPRange{
			ObjectMeta: metav1.ObjectMeta{Name: own.Name, Annotations: map[string]string{
				v1.AnnotationHarvesterClusterName: harvester, v1.AnnotationHarvesterNetworkName: network}},
			Spec: own.Spec})
		rig.Must(t, err)
		s.guestFIP(t)
	})

	// 1. Create a range, in the local cluster.
	rig.Must(t, applyAsKubectl(ctx, s.mgmt.Config, fipRange))
	rig.Eventually(t, time.Minute, "the README's range Ready", func() bool {
		r, err := s.fips.FloatingIPRange().Get(fipRange.GetName(), metav1.GetOptions{})
		return err == nil && v1.Ready.IsTrue(r)
	})

	// 2. Label the guest cluster, as the README's command does in the local cluster; Rancher copies
	// the provisioning cluster's labels to its management cluster.
	labelled := false
	for _, line := range readme.commands {
		m := labelCommand.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		if m[1] != rancher.FleetNamespace || m[2] != "clusters.provisioning.cattle.io" {
			t.Fatalf("the README labels %s in namespace %s; Rancher's guest clusters are clusters.provisioning.cattle.io of %s", m[2], m[1], rancher.FleetNamespace)
		}
		rig.Must(t, s.world.LabelGuest(guestName, guestID, m[4], m[5]))
		labelled = true
	}
	if !labelled {
		t.Fatal("the README's first FloatingIP has no kubectl label command marked yours")
	}

	// 3. The FloatingIP, from the README's range: Configured, and Idle as the README shows it.
	var fip netip.Addr
	rig.Eventually(t, 3*time.Minute, "the guest's FloatingIP from the README's range, the guest configured and kube-vip installed", func() bool {
		list, err := s.fips.FloatingIP().List(guestID, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false
		}
		x := &list.Items[0]
		a, err := netip.ParseAddr(x.Status.IPAddress)
		if err != nil || !free.Contains(a) || x.Annotations[v1.AnnotationFloatingIPRange] != fipRange.GetName() {
			return false
		}
		fip = a
		return x.Status.GuestState == v1.GuestStateConfigured && v1.GuestConfigured.IsTrue(x) && v1.KubevipInstalled.IsTrue(x)
	})
	x := s.waitServed(t, 2*time.Minute, v1.ReasonIdle)
	t.Logf("FloatingIP %s/%s holds %s of %s: guest %s, Served %s, Ready %v", x.Namespace, x.Name, fip, fipRange.GetName(),
		x.Status.GuestState, v1.Served.GetReason(x), v1.Ready.IsTrue(x))

	// 4. A LoadBalancer Service, in the guest.
	rig.Must(t, applyAsKubectl(ctx, s.guest.Config, service))

	// 5. Served: the Service's status holds the address, and the FloatingIP says so.
	rig.Eventually(t, 2*time.Minute, "the README's Service given "+fip.String()+" in its status", func() bool {
		svc, err := s.guestKube.CoreV1().Services(service.GetNamespace()).Get(ctx, service.GetName(), metav1.GetOptions{})
		return err == nil && svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
			slices.ContainsFunc(svc.Status.LoadBalancer.Ingress, func(i corev1.LoadBalancerIngress) bool { return i.IP == fip.String() })
	})
	x = s.waitServed(t, 2*time.Minute, v1.ReasonServed)
	want := service.GetNamespace() + "/" + service.GetName()
	if !v1.Ready.IsTrue(x) || x.Status.ServedBy != want {
		t.Errorf("the FloatingIP: Ready %v, servedBy %q; want Ready, served by %s", v1.Ready.IsTrue(x), x.Status.ServedBy, want)
	}
	s.servedThrough(t, fip, "the README's Service")

	// 6. A name: the README's patch gives its range a zone, and the README's lookup answers with
	// the address at the zone's server.
	s.nameAnswers(t, readme, fipRange.GetName(), fip)
}

// patchCommand is the README's kubectl patch giving its range a zone.
var patchCommand = regexp.MustCompile(`^kubectl patch fiprange (\S+) --type merge -p '(.+)'\s+` + yoursMarker)

// digCommand is the README's lookup of the guest's name, and the answer it shows.
var digCommand = regexp.MustCompile(`^dig \+short (\S+)\s+# (\S+)$`)

// e2eZone is the zone the test's DNS server serves, in place of the README's.
const e2eZone = "guests.e2e.test"

// nameAnswers follows the README's last step in the suite's world, as docs/names.md sets it up:
// the real external-dns in the local cluster (crd source, TXT registry, RFC 2136) writing to a real
// BIND on the host, and the chart's dns.enabled (upgradeToThisRelease). The README's patch is
// applied as written to its range with the test's zone for the one marked yours; the README's name
// is its guest cluster's name under its zone, and that name, for the suite's guest under the test's
// zone, answers with the guest's address.
func (s *suite) nameAnswers(t *testing.T, readme readmeFirstFloatingIP, rangeName string, fip netip.Addr) {
	t.Helper()
	var patch map[string]interface{}
	var name, cluster string
	for _, line := range readme.commands {
		line = strings.TrimSpace(line)
		if m := patchCommand.FindStringSubmatch(line); m != nil {
			if m[1] != rangeName {
				t.Fatalf("the README patches FloatingIPRange %s; its range is %s", m[1], rangeName)
			}
			rig.Must(t, json.Unmarshal([]byte(m[2]), &patch))
		}
		if m := digCommand.FindStringSubmatch(line); m != nil {
			name = m[1]
			if _, err := netip.ParseAddr(m[2]); err != nil {
				t.Fatalf("the README's lookup shows %q, no address", m[2])
			}
		}
		if m := labelCommand.FindStringSubmatch(line); m != nil {
			cluster = m[3]
		}
	}
	zone, _, _ := unstructured.NestedString(patch, "spec", "dns", "zone")
	if zone == "" || name == "" || cluster == "" || name != cluster+"."+zone {
		t.Fatalf("the README gives its range the zone %q and looks up %q; want its cluster %q under the zone", zone, name, cluster)
	}
	rig.Must(t, unstructured.SetNestedField(patch, e2eZone, "spec", "dns", "zone"))
	data, err := json.Marshal(patch)
	rig.Must(t, err)

	dns := externaldns.StartBIND(t, e2eZone)
	externaldns.Run(t, s.mgmt.Config, dns, "e2e")
	dyn, err := dynamic.NewForConfig(s.mgmt.Config)
	rig.Must(t, err)
	_, err = dyn.Resource(v1.SchemeGroupVersion.WithResource("floatingipranges")).Patch(context.Background(), rangeName,
		types.MergePatchType, data, metav1.PatchOptions{FieldManager: "kubectl-patch"})
	rig.Must(t, err)

	ours := guestName + "." + e2eZone
	var got []netip.Addr
	if !rig.Within(2*time.Minute, func() bool {
		got, err = dns.Lookup(ours, "ip4")
		return err == nil && len(got) == 1 && got[0] == fip
	}) {
		t.Fatalf("BIND answers %s with %v (%v); want %s", ours, got, err, fip)
	}
	t.Logf("%s answers %s (the README's %s)", ours, fip, name)
}
