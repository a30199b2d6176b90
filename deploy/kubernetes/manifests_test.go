package kubernetes

import (
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// stopBound is the replica's stop bound with the default timeouts
// (processor.Processor.StopBound): grace must exceed it.
const stopBound = 19

// decode reads one manifest strictly: an unknown or duplicate field, or a
// value of the wrong type, fails.
func decode(t *testing.T, file string, into any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func TestManifests(t *testing.T) {
	var sts appsv1.StatefulSet
	var svc corev1.Service
	var pdb policyv1.PodDisruptionBudget
	decode(t, "statefulset.yaml", &sts)
	decode(t, "service.yaml", &svc)
	decode(t, "pdb.yaml", &pdb)
	for _, o := range []struct{ file, kind, want, apiVersion, wantAPI string }{
		{"statefulset.yaml", sts.Kind, "StatefulSet", sts.APIVersion, "apps/v1"},
		{"service.yaml", svc.Kind, "Service", svc.APIVersion, "v1"},
		{"pdb.yaml", pdb.Kind, "PodDisruptionBudget", pdb.APIVersion, "policy/v1"},
	} {
		if o.kind != o.want || o.apiVersion != o.wantAPI {
			t.Errorf("%s: %s %s, want %s %s", o.file, o.apiVersion, o.kind, o.wantAPI, o.want)
		}
	}

	// The StatefulSet selects its own pods, through its headless Service.
	podLabels := labels.Set(sts.Spec.Template.Labels)
	if sel := sts.Spec.Selector; sel == nil || !labels.SelectorFromSet(sel.MatchLabels).Matches(podLabels) {
		t.Errorf("statefulset selector %v does not match the pod labels %v", sts.Spec.Selector, podLabels)
	}
	if sts.Spec.ServiceName != svc.Name {
		t.Errorf("statefulset serviceName %q, service %q", sts.Spec.ServiceName, svc.Name)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("service clusterIP %q: want None (headless)", svc.Spec.ClusterIP)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("service selector %v does not match the pod labels", svc.Spec.Selector)
	}
	if pdb.Spec.Selector == nil || !labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(podLabels) {
		t.Errorf("pdb selector does not match the pod labels")
	}
	if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
		t.Errorf("pdb sets neither maxUnavailable nor minAvailable")
	}
	if r := sts.Spec.Replicas; r == nil || *r < 2 {
		t.Errorf("replicas %v: want at least 2", r)
	}

	pod := sts.Spec.Template.Spec
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g <= stopBound {
		t.Errorf("terminationGracePeriodSeconds unset or not above the stop bound (%d s)", stopBound)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("containers: %d, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	flag := func(name string) string {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v
			}
		}
		return ""
	}
	if !slices.Equal(c.Args[:2], []string{"run", "orders"}) {
		t.Errorf("args %v: want run orders", c.Args)
	}

	// The pod name is the instance id, from the downward API.
	if flag("instance-id") != "$(POD_NAME)" {
		t.Errorf("--instance-id=%q: want $(POD_NAME)", flag("instance-id"))
	}
	podName := false
	for _, e := range c.Env {
		if e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			podName = true
		}
	}
	if !podName {
		t.Errorf("env POD_NAME is not the pod's metadata.name")
	}

	// State lives on the claim of a volumeClaimTemplate, mounted where
	// --state-dir points.
	stateDir := flag("state-dir")
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if m.MountPath == stateDir {
			mount = &c.VolumeMounts[i]
		}
	}
	if stateDir == "" || mount == nil {
		t.Fatalf("--state-dir=%q is not a volume mount", stateDir)
	}
	if !slices.ContainsFunc(sts.Spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool { return p.Name == mount.Name }) {
		t.Errorf("state mount %q is not a volumeClaimTemplate", mount.Name)
	}

	// Probes and scraping use the port the replica serves on.
	addr := flag("metrics-addr")
	_, port, ok := strings.Cut(addr, ":")
	if !ok {
		t.Fatalf("--metrics-addr=%q", addr)
	}
	var named string
	for _, p := range c.Ports {
		if p.ContainerPort > 0 && itoa(p.ContainerPort) == port {
			named = p.Name
		}
	}
	if named == "" {
		t.Fatalf("no container port %s", port)
	}
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("%s probe: want an HTTP GET of %s", pr.name, pr.path)
			continue
		}
		h := pr.probe.HTTPGet
		if h.Path != pr.path || (h.Port.String() != named && h.Port.String() != port) {
			t.Errorf("%s probe: GET %s on %s, want %s on %s", pr.name, h.Path, h.Port.String(), pr.path, named)
		}
	}
	for _, a := range []map[string]string{sts.Spec.Template.Annotations, svc.Annotations} {
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != port || a["prometheus.io/path"] != "/metrics" {
			t.Errorf("scrape annotations %v: want scrape true, port %s, path /metrics", a, port)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != named {
		t.Errorf("service ports %v: want the target port %q", svc.Spec.Ports, named)
	}
}

// A field the API does not know fails the strict decode: the test can fail.
func TestStrictDecodeRejectsUnknownFields(t *testing.T) {
	var sts appsv1.StatefulSet
	err := yaml.UnmarshalStrict([]byte("apiVersion: apps/v1\nkind: StatefulSet\nspec:\n  replica: 3\n"), &sts)
	if err == nil || !strings.Contains(err.Error(), "replica") {
		t.Errorf("strict decode of a misspelt field: %v", err)
	}
}

func itoa(n int32) string {
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
