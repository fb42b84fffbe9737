package e2e

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	v1 "github.com/kubefip/kube-fip-operator/pkg/apis/kubefip.k8s.binbash.org/v1"
	"github.com/kubefip/kube-fip-operator/pkg/dnsname"
	"github.com/kubefip/kube-fip-operator/pkg/kubevipconfig"
	"github.com/kubefip/kube-fip-operator/test/rig"
)

// TestIngressControllerOnTheAddress: the real Traefik runs in the guest as RKE2's rke2-traefik
// chart runs it (rke2Traefik), and an Ingress routes the names the operator would publish for the
// guest (dnsname.Names: the cluster's name and the wildcard under it) to the echo backend. Once
// the suite's range asks for it (spec.ingress), a client over the link reaches the backend at
// http://<the FloatingIP>/ with a Host under the cluster's name, through the operator's Service,
// the real kube-vip and Traefik's routing; a Host under no rule gets Traefik's 404. The
// FloatingIP says IngressServed, served by that Service. Once the range asks no more, the Service
// goes, Traefik is reached on the address no more and the address is Idle again.
func TestIngressControllerOnTheAddress(t *testing.T) {
	s := current(t)
	ctx := context.Background()
	fip := s.guestFIP(t)
	s.deleteService(t, "default", "echo") // the address is the ingress Service's alone
	x := s.guestFloatingIP(t)
	names, err := dnsname.Names(v1.RangeDNS{Zone: "fleet.example", Wildcard: true}, x.Annotations[v1.AnnotationClusterName])
	rig.Must(t, err)
	s.rke2Traefik(t)
	s.echoIngress(t, names)
	setIngress := func(on bool) {
		t.Helper()
		rig.Must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			r, err := s.fips.FloatingIPRange().Get(suiteRange, metav1.GetOptions{})
			if err != nil {
				return err
			}
			r.Spec.Ingress = on
			_, err = s.fips.FloatingIPRange().Update(r)
			return err
		}))
	}
	t.Cleanup(func() { setIngress(false) })

	setIngress(true)
	rig.Eventually(t, 2*time.Minute, "IngressServed", func() bool {
		x = s.guestFloatingIP(t)
		return v1.IngressServed.IsTrue(x)
	})
	if want := kubevipconfig.IngressNamespace + "/" + kubevipconfig.IngressServiceName; x.Status.ServedBy != want {
		t.Errorf("servedBy %q; want %s", x.Status.ServedBy, want)
	}
	n := s.firstNetwork()
	s.servedAs(t, n, fip, names[0], "Traefik, for "+names[0])
	under := "app." + names[0]
	s.servedAs(t, n, fip, under, "Traefik, for "+under)
	other := "app.another-cluster.fleet.example"
	if body, err := getAs(n.client, "http://"+fip.String()+"/", other); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Traefik answered a Host under no rule (%s) with %q, %v; want its 404", other, body, err)
	}

	setIngress(false)
	rig.Eventually(t, time.Minute, "the ingress Service gone", func() bool {
		_, err := s.guestKube.CoreV1().Services(kubevipconfig.IngressNamespace).Get(ctx, kubevipconfig.IngressServiceName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	x = s.waitServed(t, 2*time.Minute, v1.ReasonIdle)
	if c, shown := v1.GetCondition(x.Status.Conditions, v1.IngressServed); shown {
		t.Errorf("IngressServed still shown once the range asks no more: %s %s", c.Reason, c.Message)
	}
	rig.Eventually(t, time.Minute, "Traefik no more reached on the address", func() bool {
		_, err := getAs(n.client, "http://"+fip.String()+"/", names[0])
		return err != nil
	})
}

// echoIngress routes hosts to the echo backend through Traefik's IngressClass, by a ClusterIP
// Service of its own.
func (s *suite) echoIngress(t *testing.T, hosts []string) {
	t.Helper()
	ctx := context.Background()
	s.echoBackend(t)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo-backend", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: echoLabels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	_, err := s.guestKube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	rig.Must(t, err)
	class := "traefik"
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"},
		Spec: networkingv1.IngressSpec{IngressClassName: &class}}
	for _, h := range hosts {
		ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: h, IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc.Name, Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}})
	}
	_, err = s.guestKube.NetworkingV1().Ingresses(ing.Namespace).Create(ctx, ing, metav1.CreateOptions{})
	rig.Must(t, err)
	t.Cleanup(func() {
		_ = s.guestKube.NetworkingV1().Ingresses(ing.Namespace).Delete(ctx, ing.Name, metav1.DeleteOptions{})
		_ = s.guestKube.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{})
	})
}

// rke2Traefik runs the real Traefik in the guest's kube-system as RKE2 installs it: the objects
// of its chart rke2-traefik 39.0.703 (rancher/rke2-charts packages/rke2-traefik: Traefik's chart
// 39.0.7 with RKE2's values, shipping Traefik v3.6.16; release rke2-traefik), as it renders them
// for a Kubernetes Ingress controller: its ServiceAccount, ClusterRole and binding
// (the rules for Traefik v3.6 with the Kubernetes Ingress provider), the IngressClass traefik,
// the DaemonSet with its labels, ports, arguments, probes and security context, and its ClusterIP
// Service. Left out, as nothing here uses them: the CRD provider (the suite installs no Traefik
// CRDs), the host ports 80 and 443 (reaching a node's own address is what the FloatingIP
// replaces), and the metrics Service. Traefik checks for no new version and sends no usage data:
// the node has no route out. The node's control-plane taint is tolerated, as every guest workload
// of the suite does.
func (s *suite) rke2Traefik(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	const name, ns = "rke2-traefik", kubevipconfig.IngressNamespace
	const roleName = name + "-" + ns
	controller := kubevipconfig.IngressControllers()[1]
	labels := maps.Clone(controller.Selector)
	kube := s.guestKube
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName, Labels: labels}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "services"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"extensions", "networking.k8s.io"}, Resources: []string{"ingressclasses", "ingresses"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"extensions", "networking.k8s.io"}, Resources: []string{"ingresses/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: roleName, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "traefik", Labels: labels,
		Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "false"}},
		Spec: networkingv1.IngressClassSpec{Controller: "traefik.io/ingress-controller"}}
	ports := []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100}, {Name: "traefik", ContainerPort: 8080},
		{Name: controller.HTTP, ContainerPort: 8000}, {Name: controller.HTTPS, ContainerPort: 8443}}
	probe := func(failures int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ping", Port: intstr.FromString("traefik"), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: 2, PeriodSeconds: 10, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: failures}
	}
	no, yes, user := false, true, int64(65532)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				ServiceAccountName:            name,
				TerminationGracePeriodSeconds: ptr.To(int64(60)),
				NodeSelector:                  map[string]string{corev1.LabelOSStable: "linux"},
				Tolerations:                   []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				SecurityContext: &corev1.PodSecurityContext{RunAsUser: &user, RunAsGroup: &user, RunAsNonRoot: &yes,
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				Containers: []corev1.Container{{Name: name, Image: s.traefikImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Ports: ports, ReadinessProbe: probe(1), LivenessProbe: probe(3),
					Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
						Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "tmp", MountPath: "/tmp"}},
					Args: []string{
						"--entryPoints.metrics.address=:9100/tcp",
						"--entryPoints.traefik.address=:8080/tcp",
						"--entryPoints." + controller.HTTP + ".address=:8000/tcp",
						"--entryPoints." + controller.HTTPS + ".address=:8443/tcp",
						"--api.dashboard=true",
						"--ping=true",
						"--metrics.prometheus=true",
						"--metrics.prometheus.entrypoint=metrics",
						"--providers.kubernetesingress",
						"--providers.kubernetesingress.ingressClass=traefik",
						"--providers.kubernetesingress.ingressendpoint.publishedservice=" + ns + "/" + name,
						"--entryPoints." + controller.HTTPS + ".http.tls=true",
						"--log.level=INFO",
						"--global.checkNewVersion=false",
						"--global.sendAnonymousUsage=false",
					}}}}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack), Selector: labels,
			Ports: []corev1.ServicePort{{Name: controller.HTTP, Port: 80, TargetPort: intstr.FromString(controller.HTTP)},
				{Name: controller.HTTPS, Port: 443, TargetPort: intstr.FromString(controller.HTTPS)}}}}

	_, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	rig.Must(t, err)
	_, err = kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	rig.Must(t, err)
	_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	rig.Must(t, err)
	_, err = kube.NetworkingV1().IngressClasses().Create(ctx, class, metav1.CreateOptions{})
	rig.Must(t, err)
	_, err = kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	rig.Must(t, err)
	_, err = kube.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{})
	rig.Must(t, err)
	t.Cleanup(func() {
		_ = kube.AppsV1().DaemonSets(ns).Delete(ctx, name, metav1.DeleteOptions{})
		_ = kube.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
		_ = kube.NetworkingV1().IngressClasses().Delete(ctx, class.Name, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, roleName, metav1.DeleteOptions{})
		_ = kube.RbacV1().ClusterRoles().Delete(ctx, roleName, metav1.DeleteOptions{})
		_ = kube.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{})
	})
}
