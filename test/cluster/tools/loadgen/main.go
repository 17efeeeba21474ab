// Command loadgen creates pods and workloads at a fixed rate through kube-apiserver,
// as controllers and users do, and records the outcome of every request; then reads
// the stored objects back and checks them. The day-2 scenarios (test/cluster) run it
// while they roll, drain, kill and re-certify the webhook's replicas.
//
//	loadgen run   -rate 50 -duration 60s -out FILE [-count N] ...   create; one JSON line a request
//	loadgen check -in FILE ...                                      read back, add "stored" verdicts
//	loadgen sum   -in FILE [-from MS -to MS]                        counts and latencies as JSON
//	loadgen clean -run NAME                                         delete the run's objects
//	loadgen bench -ns NS -count N -workers C                         N 1-GPU pods as fast as C clients go
//	loadgen create -f LIST -workers C                                a JSON List's objects, as fast as C clients go
//
// The mix (each request a unique name, drawn from a seeded sequence, so that two runs
// of the same -count and -seed send the same requests in the same order):
//
//	gpu1, gpu4      pods asking for 1 and 4 nvidia.com/gpu           admitted, placed
//	mig             a pod asking for nvidia.com/mig-1g.10gb          admitted, placed
//	cpu             a plain CPU pod                                  admitted; never sent to the webhook
//	cpu-tol         a CPU pod tolerating sku=gpu:NoSchedule          refused
//	cpu-sel         a CPU pod selecting kubernetes.azure.com/accelerator   refused
//	cpu-aff         a CPU pod with required affinity on it           refused
//	cpu-node        a CPU pod pinned by nodeName to a GPU node       refused
//	deploy-gpu, job-gpu          a Deployment / Job with a 1-GPU template   admitted
//	deploy-cpu-tol, job-cpu-tol  with a CPU template tolerating the taint   refused at apply
//
// The pods name a scheduler that does not run (-scheduler): what is under test is what
// admission stores, and thousands of GPU pods on six fake nodes would only keep
// kube-scheduler busy retrying them. The workloads' pods are created by the real
// ReplicaSet and Job controllers, through the webhook, as on a cluster.
//
// A request that never reached kube-apiserver (connection refused or reset while it
// restarts, or its 503 while it starts) is sent again, as client-go's controllers do;
// the record counts those tries. Anything kube-apiserver answered is final.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Record is one request and what became of it.
type Record struct {
	Seq      int      `json:"seq"`
	Name     string   `json:"name"`
	NS       string   `json:"ns"`
	Kind     string   `json:"kind"`
	Class    string   `json:"class"`
	Expect   string   `json:"expect"` // admit | refuse
	Start    int64    `json:"start"`  // unix ms, when sent (the first try)
	Sched    int64    `json:"sched"`  // unix ms, when it was due at the fixed rate
	Ms       float64  `json:"ms"`     // latency of the try that got an answer
	Result   string   `json:"result"` // created | refused | webhook-error | error
	Msg      string   `json:"msg,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	Tries    int      `json:"tries"`
	Stored   string   `json:"stored,omitempty"` // check: ok | absent | unplaced | wrongly-stored | ...
}

type class struct {
	name   string
	weight int
	kind   string
	expect string
}

var classes = []class{
	{"gpu1", 20, "Pod", "admit"},
	{"gpu4", 5, "Pod", "admit"},
	{"mig", 5, "Pod", "admit"},
	{"cpu", 22, "Pod", "admit"},
	{"cpu-tol", 8, "Pod", "refuse"},
	{"cpu-sel", 8, "Pod", "refuse"},
	{"cpu-aff", 7, "Pod", "refuse"},
	{"cpu-node", 5, "Pod", "refuse"},
	{"deploy-gpu", 5, "Deployment", "admit"},
	{"deploy-cpu-tol", 5, "Deployment", "refuse"},
	{"job-gpu", 5, "Job", "admit"},
	{"job-cpu-tol", 5, "Job", "refuse"},
}

const (
	runLabel   = "gpu-admission.test/load-run"
	classLabel = "gpu-admission.test/load-class"
	msgMax     = 300 // characters of an error kept in a record
	failMsgKey = 120 // characters of an error that group failures in a sum
)

type opts struct {
	kubeconfig string
	namespaces []string
	run        string
	scheduler  string
	gpuNode    string
	seed       int64
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen run|check|sum|clean|bench [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = cmdRun(os.Args[2:])
	case "check":
		err = cmdCheck(os.Args[2:])
	case "sum":
		err = cmdSum(os.Args[2:])
	case "clean":
		err = cmdClean(os.Args[2:])
	case "bench":
		err = cmdBench(os.Args[2:])
	case "create":
		err = cmdCreate(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func common(fs *flag.FlagSet, o *opts) *string {
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	ns := fs.String("namespaces", "load-a,load-b,load-c", "comma-separated namespaces, used in turn")
	fs.StringVar(&o.run, "run", "r1", "run name: the label every object carries, and the names' prefix")
	return ns
}

func client(kubeconfig string, warn rest.WarningHandlerWithContext) (*kubernetes.Clientset, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// No client-side throttle: the rate is ours to set, and kube-apiserver's own
	// flow control is part of what is measured.
	rc.QPS, rc.Burst = -1, 0
	rc.RateLimiter = nil
	rc.WarningHandlerWithContext = warn
	rc.Timeout = 60 * time.Second
	return kubernetes.NewForConfig(rc)
}

// --- run -------------------------------------------------------------------------------

type ctxKey struct{}

// warnings collects the Warning headers of each request, keyed by the context.
type warnings struct{}

func (warnings) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, text string) {
	if p, ok := ctx.Value(ctxKey{}).(*[]string); ok && code == 299 {
		*p = append(*p, text)
	}
}

func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var o opts
	ns := common(fs, &o)
	rate := fs.Float64("rate", 50, "requests per second")
	dur := fs.Duration("duration", 60*time.Second, "how long to send (ignored with -count)")
	count := fs.Int("count", 0, "send exactly this many requests")
	workers := fs.Int("workers", 64, "requests in flight at most")
	out := fs.String("out", "", "file for the records (JSON lines)")
	stopFile := fs.String("stop-file", "", "stop sending when this file exists")
	fs.StringVar(&o.scheduler, "scheduler", "gpu-admission-load", "schedulerName of every pod")
	fs.StringVar(&o.gpuNode, "gpu-node", "aks-gput4-20000000-vmss000000", "the GPU node cpu-node pins")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the mix")
	fs.Parse(args)
	o.namespaces = strings.Split(*ns, ",")
	if *out == "" {
		return errors.New("run: -out is required")
	}
	cs, err := client(o.kubeconfig, warnings{})
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	var wmu sync.Mutex
	emit := func(r *Record) {
		b, _ := json.Marshal(r)
		wmu.Lock()
		w.Write(append(b, '\n'))
		wmu.Unlock()
	}
	rng := rand.New(rand.NewSource(o.seed))
	total := 0
	for _, c := range classes {
		total += c.weight
	}
	pick := func() class {
		n := rng.Intn(total)
		for _, c := range classes {
			if n < c.weight {
				return c
			}
			n -= c.weight
		}
		return classes[0]
	}
	jobs := make(chan *Record, *workers)
	var wg sync.WaitGroup
	var inflight int64
	for i := 0; i < *workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				atomic.AddInt64(&inflight, 1)
				send(cs, &o, r)
				atomic.AddInt64(&inflight, -1)
				emit(r)
			}
		}()
	}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / *rate)
	late := 0
	for seq := 0; ; seq++ {
		if *count > 0 && seq >= *count {
			break
		}
		due := start.Add(time.Duration(seq) * interval)
		if *count == 0 && due.Sub(start) >= *dur {
			break
		}
		if *stopFile != "" {
			if _, err := os.Stat(*stopFile); err == nil {
				break
			}
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		} else if d < -time.Second {
			late++
		}
		c := pick()
		r := &Record{Seq: seq, Name: fmt.Sprintf("%s-%s-%06d", o.run, c.name, seq), NS: o.namespaces[seq%len(o.namespaces)],
			Kind: c.kind, Class: c.name, Expect: c.expect, Sched: due.UnixMilli()}
		jobs <- r
	}
	close(jobs)
	wg.Wait()
	if late > 0 {
		fmt.Fprintf(os.Stderr, "loadgen: %d requests were sent more than 1 s late (every worker busy)\n", late)
	}
	return nil
}

// apiserverDown: the request never got an answer from kube-apiserver (it is stopped
// or starting). An answer from it, a webhook's failure included, is final.
func apiserverDown(err error) bool {
	if err == nil {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		// Starting up: "the server is currently unable to handle the request",
		// with no admission in it.
		return apierrors.IsServiceUnavailable(err) && !strings.Contains(err.Error(), "webhook")
	}
	// No status: the transport failed (refused, reset, EOF) before any answer.
	return true
}

func send(cs *kubernetes.Clientset, o *opts, r *Record) {
	r.Start = time.Now().UnixMilli()
	for {
		r.Tries++
		var warns []string
		ctx := context.WithValue(context.Background(), ctxKey{}, &warns)
		t0 := time.Now()
		err := create(ctx, cs, o, r)
		r.Ms = float64(time.Since(t0).Microseconds()) / 1000
		r.Warnings = warns
		if apiserverDown(err) && time.Since(time.UnixMilli(r.Start)) < 120*time.Second {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		switch {
		case err == nil, r.Tries > 1 && apierrors.IsAlreadyExists(err):
			// Already there on a second try: the first one reached etcd, and only
			// its answer was lost.
			r.Result = "created"
			err = nil
		case strings.Contains(err.Error(), "failed calling webhook"):
			r.Result = "webhook-error"
		case strings.Contains(err.Error(), "denied the request"):
			r.Result = "refused"
		default:
			r.Result = "error"
		}
		if err != nil {
			r.Msg = err.Error()
			if len(r.Msg) > msgMax {
				r.Msg = r.Msg[:msgMax]
			}
		}
		return
	}
}

func (o *opts) podSpec(class string) corev1.PodSpec {
	c := corev1.Container{Name: "c", Image: "registry.example/load:1"}
	gpu := func(res string, n int64) {
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceName(res): *resource.NewQuantity(n, resource.DecimalSI)}
	}
	s := corev1.PodSpec{SchedulerName: o.scheduler}
	switch strings.TrimPrefix(strings.TrimPrefix(class, "deploy-"), "job-") {
	case "gpu1", "gpu":
		gpu("nvidia.com/gpu", 1)
	case "gpu4":
		gpu("nvidia.com/gpu", 4)
	case "mig":
		gpu("nvidia.com/mig-1g.10gb", 1)
	case "cpu-tol":
		s.Tolerations = []corev1.Toleration{{Key: "sku", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	case "cpu-sel":
		s.NodeSelector = map[string]string{"kubernetes.azure.com/accelerator": "nvidia"}
	case "cpu-aff":
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "kubernetes.azure.com/accelerator", Operator: corev1.NodeSelectorOpIn, Values: []string{"nvidia"}}}}}}}}
	case "cpu-node":
		s.NodeName = o.gpuNode
	}
	s.Containers = []corev1.Container{c}
	return s
}

func create(ctx context.Context, cs *kubernetes.Clientset, o *opts, r *Record) error {
	lab := map[string]string{runLabel: o.run, classLabel: r.Class}
	meta := metav1.ObjectMeta{Name: r.Name, Labels: lab}
	var err error
	switch r.Kind {
	case "Pod":
		_, err = cs.CoreV1().Pods(r.NS).Create(ctx, &corev1.Pod{ObjectMeta: meta, Spec: o.podSpec(r.Class)}, metav1.CreateOptions{})
	case "Deployment":
		one := int32(1)
		tl := map[string]string{runLabel: o.run, classLabel: r.Class, "app": r.Name}
		_, err = cs.AppsV1().Deployments(r.NS).Create(ctx, &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": r.Name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tl}, Spec: o.podSpec(r.Class)}}}, metav1.CreateOptions{})
	case "Job":
		spec := o.podSpec(r.Class)
		spec.RestartPolicy = corev1.RestartPolicyNever
		tl := map[string]string{runLabel: o.run, classLabel: r.Class}
		_, err = cs.BatchV1().Jobs(r.NS).Create(ctx, &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tl}, Spec: spec}}}, metav1.CreateOptions{})
	}
	return err
}

// --- check -------------------------------------------------------------------------------

func readRecords(path string) ([]*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rs []*Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rs = append(rs, &r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Seq < rs[j].Seq })
	return rs, sc.Err()
}

func writeRecords(path string, rs []*Record) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, r := range rs {
		b, _ := json.Marshal(r)
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	f.Close()
	return os.Rename(path+".tmp", path)
}

// placed: the stored pod tolerates the GPU taint and is placed on GPU nodes.
func placed(p *corev1.Pod) string {
	tol := false
	for _, t := range p.Spec.Tolerations {
		if t.Key == "sku" && t.Value == "gpu" && t.Effect == corev1.TaintEffectNoSchedule {
			tol = true
		}
	}
	if !tol {
		return "no-toleration"
	}
	if len(p.Spec.NodeSelector) > 0 {
		return "ok"
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		return "ok"
	}
	return "unplaced"
}

func cmdCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	var o opts
	ns := common(fs, &o)
	in := fs.String("in", "", "the records")
	wait := fs.Duration("wait", 60*time.Second, "how long to wait for the workloads' pods")
	fs.Parse(args)
	o.namespaces = strings.Split(*ns, ",")
	rs, err := readRecords(*in)
	if err != nil {
		return err
	}
	cs, err := client(o.kubeconfig, nil)
	if err != nil {
		return err
	}
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: runLabel + "=" + o.run}
	deadline := time.Now().Add(*wait)
	for {
		pods := map[string]*corev1.Pod{}    // ns/name -> pod
		owned := map[string][]*corev1.Pod{} // ns/workload -> its pods
		deps, jobs := map[string]bool{}, map[string]bool{}
		for _, n := range o.namespaces {
			pl, err := cs.CoreV1().Pods(n).List(ctx, sel)
			if err != nil {
				return err
			}
			for i := range pl.Items {
				p := &pl.Items[i]
				pods[n+"/"+p.Name] = p
				if a := p.Labels["app"]; a != "" {
					owned[n+"/"+a] = append(owned[n+"/"+a], p)
				}
				if j := p.Labels["job-name"]; j != "" {
					owned[n+"/"+j] = append(owned[n+"/"+j], p)
				}
			}
			dl, err := cs.AppsV1().Deployments(n).List(ctx, sel)
			if err != nil {
				return err
			}
			for _, d := range dl.Items {
				deps[n+"/"+d.Name] = true
			}
			jl, err := cs.BatchV1().Jobs(n).List(ctx, sel)
			if err != nil {
				return err
			}
			for _, j := range jl.Items {
				jobs[n+"/"+j.Name] = true
			}
		}
		waiting := 0
		for _, r := range rs {
			key := r.NS + "/" + r.Name
			switch r.Kind {
			case "Pod":
				p := pods[key]
				switch {
				case p == nil && r.Result == "created":
					r.Stored = "absent"
				case p == nil:
					r.Stored = "not-stored"
				case r.Expect == "refuse":
					r.Stored = "wrongly-stored"
				case strings.HasPrefix(r.Class, "gpu") || r.Class == "mig":
					r.Stored = placed(p)
				default:
					r.Stored = "ok"
					if len(p.Spec.NodeSelector) > 0 || p.Spec.Affinity != nil {
						r.Stored = "changed"
					}
				}
			default:
				stored := deps[key] || jobs[key]
				switch {
				case !stored && r.Result == "created":
					r.Stored = "absent"
				case !stored:
					r.Stored = "not-stored"
				case r.Expect == "refuse":
					r.Stored = "wrongly-stored"
					// Stored where the mode only warns (dryrun, warn): its controller
					// makes pods the webhook judges too, and the day-2 scenario reads
					// their verdicts from the metrics right after this: wait for them
					// as for any other workload's.
					if len(owned[key]) == 0 {
						waiting++
					}
				case len(owned[key]) == 0:
					r.Stored = "no-pod"
					waiting++
				default:
					r.Stored = placed(owned[key][0])
				}
			}
		}
		if waiting == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	return writeRecords(*in, rs)
}

// --- clean ---------------------------------------------------------------------------------

// cmdClean deletes a run's objects with one DeleteCollection a kind and namespace: the
// API server deletes them itself, where kubectl delete sends one request an object.
// Grace 0: a pod pinned by nodeName (cpu-node, admitted in dryrun and warn) is bound,
// and no kubelet plays the GPU nodes to finish a graceful deletion.
func cmdClean(args []string) error {
	fs := flag.NewFlagSet("clean", flag.ExitOnError)
	var o opts
	ns := common(fs, &o)
	fs.Parse(args)
	cs, err := client(o.kubeconfig, nil)
	if err != nil {
		return err
	}
	ctx := context.Background()
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &bg}
	sel := metav1.ListOptions{LabelSelector: runLabel + "=" + o.run}
	for _, n := range strings.Split(*ns, ",") {
		if err := cs.AppsV1().Deployments(n).DeleteCollection(ctx, del, sel); err != nil {
			return err
		}
		if err := cs.BatchV1().Jobs(n).DeleteCollection(ctx, del, sel); err != nil {
			return err
		}
	}
	// The workloads' ReplicaSets and pods go with them (the garbage collector); the
	// pods are deleted here too, so none outlives the call by long.
	for i := 0; ; i++ {
		left := 0
		for _, n := range strings.Split(*ns, ",") {
			if err := cs.AppsV1().ReplicaSets(n).DeleteCollection(ctx, del, sel); err != nil {
				return err
			}
			if err := cs.CoreV1().Pods(n).DeleteCollection(ctx, del, sel); err != nil {
				return err
			}
			pl, err := cs.CoreV1().Pods(n).List(ctx, metav1.ListOptions{LabelSelector: sel.LabelSelector, Limit: 1})
			if err != nil {
				return err
			}
			left += len(pl.Items)
		}
		if left == 0 {
			return nil
		}
		if i == 60 {
			return fmt.Errorf("clean: pods of run %s still there after 60 tries", o.run)
		}
		time.Sleep(time.Second)
	}
}

// --- sum -----------------------------------------------------------------------------------

// Sum is what a window of records came to.
type Sum struct {
	Requests      int                `json:"requests"`
	Results       map[string]int     `json:"results"`       // created, refused, webhook-error, error
	Unexpected    map[string]int     `json:"unexpected"`    // by class: a result other than the expected one
	FailedCreates int                `json:"failedCreates"` // expected admit, not created
	WrongAdmits   int                `json:"wrongAdmits"`   // expected refuse, created
	CPUBlocked    int                `json:"cpuBlocked"`    // plain CPU pods not created
	Stored        map[string]int     `json:"stored"`        // check's verdicts
	Retried       int                `json:"retried"`       // sent again: kube-apiserver unreachable
	Warned        map[string]int     `json:"warned"`        // requests with a warning holding each -warn text
	FirstFail     int64              `json:"firstFailMs"`   // unix ms of the first and last failed admit
	LastFail      int64              `json:"lastFailMs"`
	FailWindowMs  int64              `json:"failWindowMs"`
	Latency       map[string]float64 `json:"latencyMs"`
	FailMsgs      map[string]int     `json:"failMessages"`
}

func cmdSum(args []string) error {
	fs := flag.NewFlagSet("sum", flag.ExitOnError)
	in := fs.String("in", "", "the records")
	from := fs.Int64("from", 0, "only requests sent at or after this unix ms")
	to := fs.Int64("to", 0, "only requests sent before this unix ms (0: no end)")
	var warns multiFlag
	fs.Var(&warns, "warn", "count the requests whose warnings contain this text (repeatable)")
	fs.Parse(args)
	rs, err := readRecords(*in)
	if err != nil {
		return err
	}
	s := Sum{Results: map[string]int{}, Unexpected: map[string]int{}, Stored: map[string]int{}, Warned: map[string]int{},
		FailMsgs: map[string]int{}, Latency: map[string]float64{}}
	var lat []float64
	for _, r := range rs {
		if r.Start < *from || (*to > 0 && r.Start >= *to) {
			continue
		}
		s.Requests++
		s.Results[r.Result]++
		if r.Stored != "" {
			s.Stored[r.Stored]++
		}
		if r.Tries > 1 {
			s.Retried++
		}
		lat = append(lat, r.Ms)
		ok := (r.Expect == "admit" && r.Result == "created") || (r.Expect == "refuse" && r.Result == "refused")
		if !ok {
			s.Unexpected[r.Class+":"+r.Result]++
		}
		if r.Expect == "admit" && r.Result != "created" {
			s.FailedCreates++
			if s.FirstFail == 0 || r.Start < s.FirstFail {
				s.FirstFail = r.Start
			}
			if end := r.Start + int64(r.Ms); end > s.LastFail {
				s.LastFail = end
			}
			m := r.Msg
			if len(m) > failMsgKey {
				m = m[:failMsgKey]
			}
			s.FailMsgs[m]++
		}
		if r.Expect == "refuse" && r.Result == "created" {
			s.WrongAdmits++
		}
		if r.Class == "cpu" && r.Result != "created" {
			s.CPUBlocked++
		}
		for _, w := range warns {
			for _, got := range r.Warnings {
				if strings.Contains(got, w) {
					s.Warned[w]++
					break
				}
			}
		}
	}
	if s.FirstFail > 0 {
		s.FailWindowMs = s.LastFail - s.FirstFail
	}
	sort.Float64s(lat)
	s.Latency["p50"], s.Latency["p99"], s.Latency["max"] = nearestRank(lat, 0.50), nearestRank(lat, 0.99), nearestRank(lat, 1)
	b, _ := json.MarshalIndent(s, "", "  ")
	fmt.Println(string(b))
	return nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
