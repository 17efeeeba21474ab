// Command kubelet plays the kubelet for the pods of one Deployment (the chart's webhook)
// on the test control plane, where no real kubelet runs. It does, for each pod of the
// selector that the real scheduler bound to one of its nodes, what the kubelet does for
// a container from the pod's own spec:
//   - an address of its own (a /32 on the network namespace's loopback), as podIP;
//   - the Secret and ConfigMap volumes projected as files, kept in step with the API
//     objects the way the kubelet's AtomicWriter does it (a timestamped directory, the
//     ..data symlink swapped by a rename, one symlink per key), so a reader never sees
//     half an update (k8s.io/kubernetes pkg/volume/util/atomic_writer.go);
//   - the image's entrypoint with the container's args (mount paths and the 0.0.0.0
//     listen address rewritten to this host's), the container's literal env;
//   - the readiness and liveness probes (httpGet, scheme HTTPS unverified as the
//     kubelet's prober does: pkg/probe/http), their period, timeout and thresholds,
//     written to the pod's status (podIP, Ready, ContainersReady, containerStatuses);
//   - a container that exits is restarted (restartPolicy Always) with the kubelet's
//     back-off (10 s doubling, 5 min cap: pkg/kubelet/kubelet.go backOffPeriod);
//   - a pod being deleted: preStop (the sleep action), then SIGTERM, then SIGKILL when
//     the pod's grace period (counted from the deletion, preStop included) is over,
//     then the final delete with grace 0 and the pod's UID as precondition
//     (pkg/kubelet/status/status_manager.go); a liveness failure kills and restarts
//     the container the same way.
//
// The real EndpointSlice controller publishes the endpoints from the status written
// here, and kube-apiserver reaches the replicas through the Service, as on AKS.
// Every step is logged as a JSON line (-events), with a timestamp, for the tests to
// measure windows. Each container's PID is in DIR/<pod>/pid so a test can SIGKILL or
// SIGSTOP one.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type config struct {
	namespace  string
	selector   string
	nodes      map[string]bool
	entrypoint []string
	ips        []string
	dir        string
	extraArgs  []string
	syncDelay  time.Duration
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// kubelet is the state of every pod it plays, keyed by the pod's UID.
type kubelet struct {
	cfg    config
	sel    labels.Selector
	client kubernetes.Interface
	mu     sync.Mutex
	pods   map[string]*podRun
	used   map[string]string // IP -> pod UID
	next   int
	events *os.File
	evMu   sync.Mutex
}

// podRun is one pod: its container process and what the status says of it.
type podRun struct {
	k        *kubelet
	uid      string
	name     string
	ip       string
	dir      string
	spec     corev1.PodSpec
	mu       sync.Mutex
	pod      *corev1.Pod // the latest seen
	cmd      *exec.Cmd
	running  bool
	exited   chan struct{}
	started  time.Time
	restarts int32
	ready    bool
	killing  bool // a stop we asked for: its exit is not a crash
	deleting bool
	done     chan struct{} // closed when the pod is gone
}

func main() {
	var kubeconfig, nodes, ips, entry, events string
	var cfg config
	var extra multi
	flag.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	flag.StringVar(&cfg.namespace, "namespace", "", "the pods' namespace")
	flag.StringVar(&cfg.selector, "selector", "", "label selector of the pods to play")
	flag.StringVar(&nodes, "nodes", "", "comma-separated names of the nodes this kubelet is")
	flag.StringVar(&entry, "entrypoint", "", "the image's entrypoint, space-separated (e.g. \"/path/gpu-admission serve\")")
	flag.StringVar(&ips, "ips", "", "comma-separated pod addresses to hand out (added to lo)")
	flag.StringVar(&cfg.dir, "dir", "", "directory for the pods' volumes, logs and PID files")
	flag.StringVar(&events, "events", "", "file the events are appended to as JSON lines")
	flag.DurationVar(&cfg.syncDelay, "volume-sync-delay", 2*time.Second,
		"how long after a Secret or ConfigMap changes its files are rewritten (the real kubelet: up to its sync period plus cache TTL, about a minute)")
	flag.Var(&extra, "extra-arg", "an argument added after the container's (repeatable)")
	flag.Parse()
	if cfg.namespace == "" || cfg.selector == "" || nodes == "" || entry == "" || ips == "" || cfg.dir == "" {
		fmt.Fprintln(os.Stderr, "kubelet: -namespace, -selector, -nodes, -entrypoint, -ips and -dir are required")
		os.Exit(2)
	}
	cfg.nodes = map[string]bool{}
	for _, n := range strings.Split(nodes, ",") {
		cfg.nodes[n] = true
	}
	cfg.entrypoint = strings.Fields(entry)
	cfg.ips = strings.Split(ips, ",")
	cfg.extraArgs = extra
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelet:", err)
		os.Exit(1)
	}
	rc.QPS, rc.Burst = 50, 100
	sel, err := labels.Parse(cfg.selector)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubelet: -selector:", err)
		os.Exit(2)
	}
	k := &kubelet{cfg: cfg, sel: sel, client: kubernetes.NewForConfigOrDie(rc), pods: map[string]*podRun{}, used: map[string]string{}}
	if events != "" {
		if k.events, err = os.OpenFile(events, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "kubelet:", err)
			os.Exit(1)
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	k.run(ctx)
	k.killAll()
}

// event logs one step as a JSON line: {"t": unix ms, "ev": ..., "pod": ..., more}.
func (k *kubelet) event(ev, pod string, kv ...any) {
	m := map[string]any{"t": time.Now().UnixMilli(), "ev": ev, "pod": pod}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	k.evMu.Lock()
	defer k.evMu.Unlock()
	if k.events != nil {
		k.events.Write(append(b, '\n'))
	}
	fmt.Fprintln(os.Stderr, string(b))
}

func (k *kubelet) run(ctx context.Context) {
	f := informers.NewSharedInformerFactoryWithOptions(k.client, 0, informers.WithNamespace(k.cfg.namespace))
	pods := f.Core().V1().Pods().Informer()
	pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.sync(o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { k.sync(o.(*corev1.Pod)) },
		DeleteFunc: func(o any) {
			if p, ok := o.(*corev1.Pod); ok {
				k.gone(string(p.UID))
			} else if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				if p, ok := t.Obj.(*corev1.Pod); ok {
					k.gone(string(p.UID))
				}
			}
		},
	})
	// Volumes follow their objects: any change of a Secret or ConfigMap re-projects
	// the pods that mount it, after the sync delay.
	resync := func(o any) {
		time.AfterFunc(k.cfg.syncDelay, k.syncVolumes)
	}
	for _, inf := range []cache.SharedIndexInformer{f.Core().V1().Secrets().Informer(), f.Core().V1().ConfigMaps().Informer()} {
		inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) { resync(o) }, AddFunc: resync})
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	k.event("synced", "")
	<-ctx.Done()
}

// selected: the pod is ours to play.
func (k *kubelet) selected(p *corev1.Pod) bool {
	return k.sel.Matches(labels.Set(p.Labels)) && k.cfg.nodes[p.Spec.NodeName]
}

// sync: what the kubelet's pod worker does on every update of one of its pods.
func (k *kubelet) sync(p *corev1.Pod) {
	if !k.selected(p) {
		return
	}
	uid := string(p.UID)
	k.mu.Lock()
	r := k.pods[uid]
	if r == nil {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			k.mu.Unlock()
			return
		}
		ip := k.allocIP(uid)
		if ip == "" {
			k.mu.Unlock()
			k.event("no-address", p.Name)
			return
		}
		r = &podRun{k: k, uid: uid, name: p.Name, ip: ip, dir: filepath.Join(k.cfg.dir, p.Name), spec: *p.Spec.DeepCopy(), pod: p.DeepCopy(), done: make(chan struct{})}
		k.pods[uid] = r
		k.mu.Unlock()
		go r.live()
		return
	}
	k.mu.Unlock()
	r.mu.Lock()
	r.pod = p.DeepCopy()
	start := p.DeletionTimestamp != nil && !r.deleting
	if start {
		r.deleting = true
	}
	r.mu.Unlock()
	if start {
		go r.terminate()
	}
}

// gone: the pod object is deleted (our final delete, or a force delete by a test).
func (k *kubelet) gone(uid string) {
	k.mu.Lock()
	r := k.pods[uid]
	k.mu.Unlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	start := !r.deleting
	r.deleting = true
	r.mu.Unlock()
	if start {
		// A force delete: the kubelet kills the container with no grace left.
		go r.terminate()
	}
}

// allocIP: the least recently freed address, so that a new pod rarely takes the
// address a terminated one had (kube-apiserver may still hold connections to it).
func (k *kubelet) allocIP(uid string) string {
	for i := 0; i < len(k.cfg.ips); i++ {
		ip := k.cfg.ips[(k.next+i)%len(k.cfg.ips)]
		if _, taken := k.used[ip]; !taken {
			k.used[ip] = uid
			k.next = (k.next + i + 1) % len(k.cfg.ips)
			exec.Command("ip", "addr", "add", ip+"/32", "dev", "lo").Run() // already there: fine
			return ip
		}
	}
	return ""
}

func (k *kubelet) freeIP(ip string) {
	k.mu.Lock()
	delete(k.used, ip)
	k.mu.Unlock()
}

func (k *kubelet) syncVolumes() {
	k.mu.Lock()
	runs := make([]*podRun, 0, len(k.pods))
	for _, r := range k.pods {
		runs = append(runs, r)
	}
	k.mu.Unlock()
	for _, r := range runs {
		if err := r.project(); err != nil {
			k.event("volume-error", r.name, "error", err.Error())
		}
	}
}

func (k *kubelet) killAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range k.pods {
		r.mu.Lock()
		if r.cmd != nil && r.cmd.Process != nil {
			r.cmd.Process.Signal(syscall.SIGKILL)
		}
		r.mu.Unlock()
	}
}

// --- one pod ----------------------------------------------------------------------

func (r *podRun) container() *corev1.Container { return &r.spec.Containers[0] }

// live: volumes, the container, its probes, restarts; until the pod is deleted.
func (r *podRun) live() {
	k := r.k
	k.event("bound", r.name, "node", r.spec.NodeName, "ip", r.ip)
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		k.event("error", r.name, "error", err.Error())
		return
	}
	for {
		if err := r.project(); err == nil {
			break
		} else {
			k.event("volume-error", r.name, "error", err.Error())
		}
		if r.isDeleting() {
			return
		}
		time.Sleep(time.Second)
	}
	r.writeStatus()
	// The kubelet restarts a crashed container at once the first time, then after
	// 10 s, doubling up to 5 min; ten minutes of running forgive it
	// (pkg/kubelet/kuberuntime doBackOff, pkg/kubelet/kubelet.go backOffPeriod).
	crashes := 0
	for !r.isDeleting() {
		if crashes > 1 {
			backoff := 10 * time.Second << (crashes - 2)
			if backoff > 5*time.Minute || backoff <= 0 {
				backoff = 5 * time.Minute
			}
			k.event("backoff", r.name, "seconds", backoff.Seconds())
			if r.sleepUnlessDeleted(backoff) {
				break
			}
		}
		if err := r.start(); err != nil {
			k.event("start-error", r.name, "error", err.Error())
			crashes++
			continue
		}
		stop := make(chan struct{})
		go r.probe(stop)
		<-r.exited
		close(stop)
		r.mu.Lock()
		killed := r.killing
		r.killing = false
		r.ready = false
		code := r.cmd.ProcessState.String()
		r.mu.Unlock()
		k.event("exited", r.name, "status", code, "asked", killed)
		if r.isDeleting() {
			break
		}
		r.mu.Lock()
		r.restarts++
		r.mu.Unlock()
		r.writeStatus()
		switch {
		case killed: // a liveness kill: restarted at once, as a first crash
		case time.Since(r.started) > 10*time.Minute:
			crashes = 0
		default:
			crashes++
		}
	}
	<-r.done
}

func (r *podRun) isDeleting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleting
}

// sleepUnlessDeleted: true when the pod went into deletion meanwhile.
func (r *podRun) sleepUnlessDeleted(d time.Duration) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if r.isDeleting() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// hostPath: a container path mapped to this host through the volume mounts.
func (r *podRun) hostPath(p string) string {
	c := r.container()
	best := ""
	for _, m := range c.VolumeMounts {
		if (p == m.MountPath || strings.HasPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/")) && len(m.MountPath) > len(best) {
			best = m.MountPath
		}
	}
	if best == "" {
		return p
	}
	var name string
	for _, m := range c.VolumeMounts {
		if m.MountPath == best {
			name = m.Name
		}
	}
	return filepath.Join(r.dir, "volumes", name) + strings.TrimPrefix(p, best)
}

// args: the container's command or the image's entrypoint, then its args, with paths
// under a mount and the wildcard listen address rewritten.
func (r *podRun) args() []string {
	c := r.container()
	cmd := r.k.cfg.entrypoint
	if len(c.Command) > 0 {
		cmd = c.Command
	}
	var out []string
	for _, a := range append(append([]string{}, cmd[1:]...), c.Args...) {
		if i := strings.Index(a, "="); i > 0 && strings.HasPrefix(a[i+1:], "/") {
			a = a[:i+1] + r.hostPath(a[i+1:])
		} else if strings.HasPrefix(a, "/") {
			a = r.hostPath(a)
		}
		a = strings.Replace(a, "0.0.0.0:", r.ip+":", 1)
		out = append(out, a)
	}
	return append(out, r.k.cfg.extraArgs...)
}

func (r *podRun) start() error {
	c := r.container()
	bin := r.k.cfg.entrypoint[0]
	if len(c.Command) > 0 {
		bin = c.Command[0]
	}
	logf, err := os.OpenFile(filepath.Join(r.dir, "container.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, r.args()...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOSTNAME=" + r.name}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				v = r.name
			case "metadata.namespace":
				v = r.k.cfg.namespace
			case "status.podIP":
				v = r.ip
			case "spec.nodeName":
				v = r.spec.NodeName
			}
		}
		cmd.Env = append(cmd.Env, e.Name+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		r.mu.Lock()
		r.running = false
		r.mu.Unlock()
		close(exited)
	}()
	r.mu.Lock()
	r.cmd, r.exited, r.started, r.ready, r.running = cmd, exited, time.Now(), false, true
	r.mu.Unlock()
	os.WriteFile(filepath.Join(r.dir, "pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	r.k.event("started", r.name, "pid", cmd.Process.Pid, "args", strings.Join(cmd.Args, " "))
	r.writeStatus()
	return nil
}

// probe runs the readiness and liveness probes until stop.
func (r *podRun) probe(stop chan struct{}) {
	c := r.container()
	go r.probeLoop(c.ReadinessProbe, "readiness", stop, func(ok bool) {
		r.mu.Lock()
		changed := r.ready != ok
		r.ready = ok
		r.mu.Unlock()
		if changed {
			r.k.event(map[bool]string{true: "ready", false: "not-ready"}[ok], r.name)
			r.writeStatus()
		}
	})
	if c.LivenessProbe != nil {
		go r.probeLoop(c.LivenessProbe, "liveness", stop, func(ok bool) {
			if !ok {
				r.k.event("liveness-failed", r.name)
				r.kill(r.grace())
			}
		})
	}
}

// probeLoop: the prober's worker (pkg/kubelet/prober/worker.go): a result changes
// after failureThreshold failures or successThreshold successes in a row.
func (r *podRun) probeLoop(p *corev1.Probe, what string, stop chan struct{}, set func(bool)) {
	if p == nil {
		if what == "readiness" {
			set(true)
		}
		return
	}
	period := time.Duration(max32(p.PeriodSeconds, 10)) * time.Second
	timeout := time.Duration(max32(p.TimeoutSeconds, 1)) * time.Second
	succ, fail := int(max32(p.SuccessThreshold, 1)), int(max32(p.FailureThreshold, 3))
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // the kubelet does not verify
		DisableKeepAlives: true,                                  // nor keep a connection
	}}
	select {
	case <-stop:
		return
	case <-time.After(time.Duration(p.InitialDelaySeconds) * time.Second):
	}
	// The kubelet probes right away, then every period; a readiness result starts false.
	okRun, failRun, state := 0, 0, what != "readiness"
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		ok := r.httpProbe(client, p.HTTPGet)
		if ok {
			okRun, failRun = okRun+1, 0
		} else {
			failRun, okRun = failRun+1, 0
		}
		if ok && okRun >= succ && !state {
			state = true
			set(true)
		} else if !ok && failRun >= fail && state {
			state = false
			set(false)
			if what == "liveness" {
				return
			}
		} else if what == "readiness" && !ok && failRun >= fail {
			set(false)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func max32(v, d int32) int32 {
	if v <= 0 {
		return d
	}
	return v
}

func (r *podRun) port(p intstr.IntOrString) int {
	if p.Type == intstr.Int {
		return p.IntValue()
	}
	for _, cp := range r.container().Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	return 0
}

func (r *podRun) httpProbe(client *http.Client, g *corev1.HTTPGetAction) bool {
	if g == nil {
		return true
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	u := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(r.ip, strconv.Itoa(r.port(g.Port))), g.Path)
	resp, err := client.Get(u)
	if err != nil {
		return false
	}
	resp.Body.Close()
	// pkg/probe/http: 200 <= code < 400 is success.
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

func (r *podRun) grace() time.Duration {
	g := int64(30)
	if r.spec.TerminationGracePeriodSeconds != nil {
		g = *r.spec.TerminationGracePeriodSeconds
	}
	return time.Duration(g) * time.Second
}

// kill: preStop, SIGTERM, and SIGKILL when grace (counted from now) is over.
func (r *podRun) kill(grace time.Duration) {
	deadline := time.Now().Add(grace)
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	if cmd == nil || cmd.Process == nil {
		r.mu.Unlock()
		return
	}
	r.killing = true
	r.mu.Unlock()
	select {
	case <-exited:
		return
	default:
	}
	if ls := r.container().Lifecycle; ls != nil && ls.PreStop != nil && ls.PreStop.Sleep != nil && grace > 0 {
		d := time.Duration(ls.PreStop.Sleep.Seconds) * time.Second
		if d > grace {
			d = grace
		}
		r.k.event("prestop", r.name, "seconds", d.Seconds())
		select {
		case <-exited:
			return
		case <-time.After(d):
		}
	}
	r.k.event("sigterm", r.name)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	// A stopped process (SIGSTOP) gets the signal only when it runs again; the kubelet's
	// runtime (containerd) sends SIGKILL at the deadline either way.
	select {
	case <-exited:
	case <-time.After(time.Until(deadline)):
		r.k.event("sigkill", r.name)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// terminate: the pod is being deleted.
func (r *podRun) terminate() {
	r.mu.Lock()
	p := r.pod
	r.mu.Unlock()
	grace := time.Duration(0)
	if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil {
		// The grace runs from the deletion, as the kubelet counts it.
		grace = time.Until(p.DeletionTimestamp.Time) // DeletionTimestamp = request time + grace
		if grace < 0 {
			grace = 0
		}
	}
	r.k.event("deleting", r.name, "grace", grace.Seconds())
	r.kill(grace)
	r.mu.Lock()
	r.ready = false
	r.mu.Unlock()
	// The kubelet's last word: the pod's final status, then the delete with grace 0.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	uid := p.UID
	zero := int64(0)
	for ctx.Err() == nil {
		err := r.k.client.CoreV1().Pods(r.k.cfg.namespace).Delete(ctx, r.name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.k.event("deleted", r.name)
	r.k.freeIP(r.ip)
	r.k.mu.Lock()
	delete(r.k.pods, r.uid)
	r.k.mu.Unlock()
	close(r.done)
}

// writeStatus: the status the kubelet's status manager writes.
func (r *podRun) writeStatus() {
	if r.isDeleting() && r.cmd == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for attempt := 0; attempt < 5; attempt++ {
		p, err := r.k.client.CoreV1().Pods(r.k.cfg.namespace).Get(ctx, r.name, metav1.GetOptions{})
		if err != nil || string(p.UID) != r.uid {
			return
		}
		r.mu.Lock()
		ready, restarts, started, running := r.ready, r.restarts, r.started, r.running
		r.mu.Unlock()
		now := metav1.Now()
		cond := func(t corev1.PodConditionType, v bool) corev1.PodCondition {
			s := corev1.ConditionFalse
			if v {
				s = corev1.ConditionTrue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == t && c.Status == s {
					return c
				}
			}
			return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
		}
		st := p.Status
		st.Phase = corev1.PodRunning
		st.HostIP = r.ip
		st.HostIPs = []corev1.HostIP{{IP: r.ip}}
		st.PodIP = r.ip
		st.PodIPs = []corev1.PodIP{{IP: r.ip}}
		if st.StartTime == nil {
			st.StartTime = &now
		}
		st.Conditions = []corev1.PodCondition{
			cond(corev1.PodScheduled, true), cond(corev1.PodInitialized, true),
			cond(corev1.ContainersReady, ready), cond(corev1.PodReady, ready),
		}
		cs := corev1.ContainerStatus{Name: r.container().Name, Image: r.container().Image,
			ImageID: r.container().Image, ContainerID: "fake://" + r.uid, Ready: ready, RestartCount: restarts}
		t := true
		cs.Started = &t
		if running {
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}
		} else {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
			f := false
			cs.Started = &f
		}
		st.ContainerStatuses = []corev1.ContainerStatus{cs}
		p.Status = st
		_, err = r.k.client.CoreV1().Pods(r.k.cfg.namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			r.k.event("status-error", r.name, "error", err.Error())
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// project writes the pod's Secret and ConfigMap volumes, AtomicWriter's way.
func (r *podRun) project() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, v := range r.spec.Volumes {
		var data map[string][]byte
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			s, err := r.k.client.CoreV1().Secrets(r.k.cfg.namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			data, items = s.Data, v.Secret.Items
		case v.ConfigMap != nil:
			cm, err := r.k.client.CoreV1().ConfigMaps(r.k.cfg.namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			data = map[string][]byte{}
			for key, val := range cm.Data {
				data[key] = []byte(val)
			}
			items = v.ConfigMap.Items
		case v.EmptyDir != nil:
			os.MkdirAll(filepath.Join(r.dir, "volumes", v.Name), 0o755)
			continue
		default:
			continue
		}
		files := map[string][]byte{}
		if len(items) == 0 {
			for key, val := range data {
				files[key] = val
			}
		} else {
			for _, it := range items {
				files[it.Path] = data[it.Key]
			}
		}
		if err := atomicWrite(filepath.Join(r.dir, "volumes", v.Name), files); err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
	}
	return nil
}

// atomicWrite: pkg/volume/util/atomic_writer.go in short. Unchanged content is left
// alone (no new directory, no event for the reader's file watch).
func atomicWrite(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	same := true
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, "..data", name))
		if err != nil || string(got) != string(want) {
			same = false
			break
		}
	}
	if same {
		return nil
	}
	ts, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05.")+"")
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o644); err != nil {
			return err
		}
		names = append(names, name)
	}
	sort.Strings(names)
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for _, name := range names {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err != nil {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				return err
			}
		}
	}
	if old != "" {
		os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}
