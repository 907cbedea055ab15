// Package secure checks a Go client against a himga server with an auth file and mutual TLS:
// served with a token and a certificate of the server's CA; refused without a token
// (UNAUTHENTICATED), beyond its token's rights (PERMISSION_DENIED), and at the handshake with an
// expired client certificate or one from another CA; and it refuses a server whose certificate
// comes from another CA; a client certificate without its key or the CA is an error, and the
// flags the examples share (dial.Options.AddFlags) fill the options without showing the token.
// tests/languages/test_secure.py starts the server, makes the certificates and tokens, and
// passes them in the environment.
package secure

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"himga.dev/himga/examples/go/dial"
	"himga.dev/himga/examples/go/memoryerr"
	memoryv1 "himga.dev/himga/generated/go/himga/memory/v1"
	"himga.dev/himga/tests/go/internal/testenv"
)

func env(t *testing.T, name string) string {
	t.Helper()
	value := os.Getenv(name)
	if value == "" {
		t.Skipf("%s is not set: run through `pytest tests/languages/test_secure.py`", name)
	}
	return value
}

// options are the good client's: a token, the CA, and a certificate of that CA.
func options(t *testing.T) dial.Options {
	return dial.Options{
		Token: env(t, "HIMGA_TOKEN"),
		CA:    env(t, "HIMGA_TLS_CA"),
		Cert:  env(t, "HIMGA_TLS_CERT"),
		Key:   env(t, "HIMGA_TLS_KEY"),
	}
}

func client(t *testing.T, o dial.Options) memoryv1.MemoryServiceClient {
	t.Helper()
	conn, err := o.Connect(testenv.Target(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return memoryv1.NewMemoryServiceClient(conn)
}

func ingest(t *testing.T, c memoryv1.MemoryServiceClient, namespace string) error {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := c.Ingest(ctx, &memoryv1.IngestRequest{
		Namespace: namespace,
		Message:   &memoryv1.Message{Role: "user", Content: "over mutual tls"},
		Session:   &memoryv1.Session{SessionId: "s1"},
	})
	return err
}

func TestServedWithATokenAndACertificate(t *testing.T) {
	c := client(t, options(t))
	if err := ingest(t, c, "go-secure"); err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	resp, err := c.Retrieve(t.Context(), &memoryv1.RetrieveRequest{Namespace: "go-secure", Query: "mutual"})
	if err != nil || len(resp.GetHits()) == 0 {
		t.Fatalf("Retrieve: %v, %v", resp, err)
	}
}

func TestRefusedWithoutAToken(t *testing.T) {
	o := options(t)
	o.Token = ""
	err := ingest(t, client(t, o), "go-secure")
	if status.Code(err) != codes.Unauthenticated || memoryerr.Reason(err) != memoryerr.Unauthenticated {
		t.Fatalf("want UNAUTHENTICATED with its reason, got %v", err)
	}
}

func TestRefusedBeyondTheTokensRights(t *testing.T) {
	o := options(t)
	o.Token = env(t, "HIMGA_READ_TOKEN")
	err := ingest(t, client(t, o), "go-secure")
	if status.Code(err) != codes.PermissionDenied || memoryerr.Reason(err) != memoryerr.PermissionDenied {
		t.Fatalf("want PERMISSION_DENIED with its reason, got %v", err)
	}
}

func TestRefusedAtTheHandshake(t *testing.T) {
	for _, cert := range []string{"EXPIRED", "OTHER"} {
		t.Run(cert, func(t *testing.T) {
			o := options(t)
			o.Cert = env(t, "HIMGA_TLS_"+cert+"_CERT")
			o.Key = env(t, "HIMGA_TLS_"+cert+"_KEY")
			if err := ingest(t, client(t, o), "go-secure"); status.Code(err) != codes.Unavailable {
				t.Fatalf("want UNAVAILABLE (the handshake fails), got %v", err)
			}
		})
	}
}

func TestRefusesAServerCertificateFromAnotherCA(t *testing.T) {
	o := options(t)
	o.CA = env(t, "HIMGA_TLS_OTHER_CA")
	if err := ingest(t, client(t, o), "go-secure"); status.Code(err) != codes.Unavailable {
		t.Fatalf("want UNAVAILABLE (the server's certificate is not trusted), got %v", err)
	}
}

func TestACertificateWithoutItsKeyOrTheCAIsAnError(t *testing.T) {
	noKey := options(t)
	noKey.Key = ""
	noCA := options(t)
	noCA.CA = ""
	for name, o := range map[string]dial.Options{"no key": noKey, "no CA": noCA} {
		if conn, err := o.Connect(testenv.Target(t)); err == nil {
			conn.Close()
			t.Errorf("%s: connected (in plaintext or without a certificate)", name)
		}
	}
}

func TestTheFlagsFillTheOptions(t *testing.T) {
	t.Setenv("HIMGA_TOKEN", "from-the-environment")
	var o dial.Options
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"-tls-ca", "ca.pem", "-tls-cert", "c.pem", "-tls-key", "k.pem"}); err != nil {
		t.Fatal(err)
	}
	want := dial.Options{Token: "from-the-environment", CA: "ca.pem", Cert: "c.pem", Key: "k.pem"}
	if o != want {
		t.Fatalf("got %+v, want %+v", o, want)
	}
	if err := fs.Parse([]string{"-token", "given"}); err != nil || o.Token != "given" {
		t.Fatalf("-token: %v, %q", err, o.Token)
	}
	var usage strings.Builder
	fs.SetOutput(&usage)
	fs.PrintDefaults()
	if strings.Contains(usage.String(), "given") {
		t.Fatalf("the usage shows the token:\n%s", usage.String())
	}
}
