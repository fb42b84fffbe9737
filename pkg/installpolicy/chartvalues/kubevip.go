package chartvalues

import (
	"fmt"
	"net/netip"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/guestchart"
	"github.com/kubefip/kube-fip-operator/pkg/installpolicy/imagepolicy"
)

// KubevipNameOverride names every object of the kube-vip release the operator installs, unless the
// values set nameOverride. The kube-vip chart names its DaemonSet, ServiceAccount, roles and
// bindings after nameOverride alone, never after the release, and the Harvester cloud provider's
// kube-vip subchart already owns all of them as "kube-vip" in every Harvester guest.
const KubevipNameOverride = "kube-fip-kube-vip"

// kubevipValues is the typed schema of the kube-vip chart's values (kube-vip/helm-charts kube-vip
// 0.4.1 and later, which read the environment from the env map; read from 0.9.9).
type kubevipValues struct {
	Image        *imagepolicy.Value              `json:"image,omitempty"`
	Env          map[string]envValue             `json:"env,omitempty"`
	EnvValueFrom map[string]envFieldRef          `json:"envValueFrom,omitempty"`
	Config       *kubevipConfig                  `json:"config,omitempty"`
	NameOverride string                          `json:"nameOverride,omitempty"`
	Update       *appsv1.DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`
	PodMonitor   *podMonitorValues               `json:"podMonitor,omitempty"`
	Scheduling
}

// kubevipConfig is the chart's config key: the control-plane address, read with env.cp_enable;
// vip_interface was read there by charts 0.3.7 and 0.4.0 only, and is passed on as
// env.vip_interface.
type kubevipConfig struct {
	Address      string `json:"address,omitempty"`
	VIPInterface string `json:"vip_interface,omitempty"`
}

type podMonitorValues struct {
	Enabled bool              `json:"enabled,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// envFieldRef is one entry of envValueFrom: only the pod's own fields, never a Secret or a
// ConfigMap of the guest, may fill a variable.
type envFieldRef struct {
	FieldRef *corev1.ObjectFieldSelector `json:"fieldRef"`
}

func kubevipKeys() []KeyDoc {
	return append([]KeyDoc{
		{"image", "repository (one of the allowed kube-vip images; under a registry (guestImages), ghcr.io/kube-vip/kube-vip or none is moved there), tag (a kube-vip release of v0.6.0 or later, pinned with @sha256: and a digest where the deployment requires digests), pullPolicy (Always, IfNotPresent, Never)"},
		{"env", "kube-vip's variables, each of the names below, in the form kube-vip reads it; those of a mode only when the deployment allows the mode"},
		{"envValueFrom", "bgp_routerid and bgp_sourceip (BGP mode) from the pod's address: {fieldRef: {fieldPath: status.podIP or status.hostIP}}"},
		{"config", "address (an IP address, read with env.cp_enable; control-plane mode), vip_interface (the original operator's key, passed on as env.vip_interface)"},
		{"nameOverride", KubevipNameOverride + " only: the operator names every object of the release, beside the Harvester cloud provider's kube-vip"},
		{"updateStrategy", "a DaemonSet update strategy"},
		{"podMonitor", "enabled (true or false), labels: a PodMonitor scraping the monitoring port, with no credentials or relabelling"},
	}, schedulingKeys()...)
}

// podAddress reports whether ref reads the pod's own address, which on the host's network is the
// node's: the one field of the pod envValueFrom may read.
func podAddress(ref *corev1.ObjectFieldSelector) bool {
	return ref != nil && (ref.FieldPath == "status.podIP" || ref.FieldPath == "status.hostIP") && (ref.APIVersion == "" || ref.APIVersion == "v1")
}

func (s Schema) kubevipValues(raw map[string]interface{}) (Values, error) {
	var v kubevipValues
	if err := s.decode(raw, guestchart.Kubevip, &v.Image, &v.Scheduling, target{"env", &v.Env}, target{"envValueFrom", &v.EnvValueFrom},
		target{"config", &v.Config}, target{"nameOverride", &v.NameOverride},
		target{"updateStrategy", &v.Update}, target{"podMonitor", &v.PodMonitor}); err != nil {
		return Values{}, err
	}
	if err := s.checkKubevip(&v); err != nil {
		return Values{}, err
	}
	// The operator's own keys: the name beside Harvester's kube-vip, and the original operator's
	// config.vip_interface where every chart since 0.4.1 reads it.
	v.NameOverride = KubevipNameOverride
	if v.Config != nil && v.Config.VIPInterface != "" {
		if _, set := v.Env["vip_interface"]; !set {
			if v.Env == nil {
				v.Env = map[string]envValue{}
			}
			v.Env["vip_interface"] = envValue(v.Config.VIPInterface)
		}
		v.Config.VIPInterface = ""
	}
	return s.values(&v, &v.Scheduling, v.Image, ObjectName(guestchart.Kubevip, v.NameOverride))
}

func (s Schema) checkKubevip(v *kubevipValues) error {
	for name, value := range v.Env {
		if err := s.checkEnv(name, string(value)); err != nil {
			return err
		}
	}
	for name, ref := range v.EnvValueFrom {
		if r, ok := s.envRule(name); !ok || !r.fromPod {
			return fmt.Errorf("envValueFrom.%s: only bgp_routerid and bgp_sourceip, with BGP mode allowed, may be filled from the pod", guestchart.Shorten(name))
		}
		if !podAddress(ref.FieldRef) {
			return fmt.Errorf("envValueFrom.%s must be a fieldRef of status.podIP or status.hostIP", name)
		}
	}
	if v.Config != nil {
		if v.Config.Address != "" {
			if !s.Modes[ModeControlPlane] {
				return fmt.Errorf("config.address is the control plane's address: kube-vip's controlplane mode, which the deployment does not allow (--allowed-kubevip-modes)")
			}
			if _, err := netip.ParseAddr(v.Config.Address); err != nil {
				return fmt.Errorf("config.address must be an IP address")
			}
		}
		if v.Config.VIPInterface != "" && !interfaceName.MatchString(v.Config.VIPInterface) {
			return fmt.Errorf("config.vip_interface must be a network interface name")
		}
	}
	// Every object of the release is named after nameOverride; the name is the product's, so that
	// no value can give the release another component's ServiceAccount, roles or DaemonSet.
	if v.NameOverride != "" && v.NameOverride != KubevipNameOverride {
		return fmt.Errorf("nameOverride must be %s (or left out): the operator names the release's objects", KubevipNameOverride)
	}
	if u := v.Update; u != nil {
		if err := CheckUpdateStrategy(u); err != nil {
			return err
		}
	}
	if v.PodMonitor != nil {
		if err := CheckLabels("podMonitor.labels", v.PodMonitor.Labels); err != nil {
			return err
		}
	}
	return nil
}

// CheckUpdateStrategy allows a DaemonSet update strategy as the API server would.
func CheckUpdateStrategy(u *appsv1.DaemonSetUpdateStrategy) error {
	switch u.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		if u.RollingUpdate != nil {
			return fmt.Errorf("updateStrategy.rollingUpdate needs type RollingUpdate")
		}
	case "", appsv1.RollingUpdateDaemonSetStrategyType:
	default:
		return fmt.Errorf("updateStrategy.type must be RollingUpdate or OnDelete")
	}
	if r := u.RollingUpdate; r != nil {
		for name, q := range map[string]string{"maxUnavailable": intOrPercent(r.MaxUnavailable), "maxSurge": intOrPercent(r.MaxSurge)} {
			if q != "" && !countOrPercent.MatchString(q) {
				return fmt.Errorf("updateStrategy.rollingUpdate.%s must be a whole number or a percentage", name)
			}
		}
	}
	return nil
}
