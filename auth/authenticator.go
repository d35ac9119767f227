package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const (
	authHeader   = "authorization"
	basicScheme  = "basic"
	bearerScheme = "bearer"
	tokenPrefix  = "fgw1." // versioned so the token format can change
	// healthPrefix: the gRPC health service answers without credentials
	// (probes cannot authenticate) and reveals nothing but liveness.
	healthPrefix = "/grpc.health.v1.Health/"
)

// Authenticator resolves the principal of each call. Build it with New.
type Authenticator struct {
	enabled bool
	users   map[string]User
	tokens  map[[sha256.Size]byte]Token
	key     []byte
	ttl     time.Duration
	now     func() time.Time
	// throttle counts failed logins, checked before each password check.
	throttle *throttle
}

// New builds an Authenticator from a validated configuration.
func New(cfg Config) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{
		enabled: cfg.Enabled,
		users:   map[string]User{},
		tokens:  map[[sha256.Size]byte]Token{},
		ttl:     cfg.TokenTTL.Duration,
		now:     time.Now,
	}
	if a.ttl == 0 {
		a.ttl = DefaultTokenTTL
	}
	a.throttle = newThrottle(func() time.Time { return a.now() })
	for _, u := range cfg.Users {
		if u.Realm == "" {
			u.Realm = DefaultRealm
		}
		a.users[u.Name] = u
	}
	for _, t := range cfg.Tokens {
		if t.Realm == "" {
			t.Realm = DefaultRealm
		}
		var h [sha256.Size]byte
		b, _ := hex.DecodeString(strings.TrimPrefix(t.SHA256, "sha256:"))
		copy(h[:], b)
		a.tokens[h] = t
	}
	if cfg.SigningKey != "" {
		a.key = []byte(cfg.SigningKey)
	} else {
		a.key = make([]byte, 32)
		if _, err := rand.Read(a.key); err != nil {
			return nil, fmt.Errorf("auth: signing key: %w", err)
		}
	}
	return a, nil
}

// Enabled reports whether calls must authenticate.
func (a *Authenticator) Enabled() bool { return a.enabled }

// dummyHash is a real bcrypt hash of the default cost, compared against when
// the user does not exist.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("flightgw-no-such-user"), bcrypt.DefaultCost)
	return h
})

// errBadCredentials is deliberately vague: it never says whether the user
// exists.
var errBadCredentials = status.Error(codes.Unauthenticated, "invalid username or password")

// Login checks a username and password and returns the principal. It
// is not throttled: the interceptors log callers in with login.
func (a *Authenticator) Login(username, password string) (Principal, error) {
	u, ok := a.users[username]
	if !ok {
		// Spend the same time as a real check so timing does not reveal
		// which users exist.
		_ = bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return Principal{}, errBadCredentials
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return Principal{}, errBadCredentials
	}
	return Principal{Name: u.Name, Realm: u.Realm}, nil
}

// login is Login for a caller at addr, throttled (see throttle.go): a
// username, a username at addr, or addr for a username that failed, with
// too many recent failures is refused ResourceExhausted before any
// password check.
func (a *Authenticator) login(ctx context.Context, addr, username, password string) (Principal, error) {
	addrLocked, err := a.throttle.check(username, addr)
	if err != nil {
		return Principal{}, err
	}
	release, err := a.throttle.acquire(ctx, addr, addrLocked)
	if err != nil {
		return Principal{}, err
	}
	defer release()
	// Failures may have landed while this login waited for its turn.
	if _, err := a.throttle.check(username, addr); err != nil {
		return Principal{}, err
	}
	p, err := a.Login(username, password)
	if err != nil {
		a.throttle.failed(username, addr)
		return Principal{}, err
	}
	a.throttle.succeeded(username, addr)
	return p, nil
}

type tokenClaims struct {
	Sub   string `json:"sub"`
	Realm string `json:"realm"`
	Exp   int64  `json:"exp"`
}

// IssueToken returns a signed bearer token for p that expires after the
// configured TTL.
func (a *Authenticator) IssueToken(p Principal) string {
	body, _ := json.Marshal(tokenClaims{Sub: p.Name, Realm: p.Realm, Exp: a.now().Add(a.ttl).Unix()})
	payload := base64.RawURLEncoding.EncodeToString(body)
	return tokenPrefix + payload + "." + a.sign(payload)
}

func (a *Authenticator) sign(payload string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// VerifyToken resolves a bearer token: an issued one (signature and expiry
// checked) or a configured static one.
func (a *Authenticator) VerifyToken(token string) (Principal, error) {
	if rest, ok := strings.CutPrefix(token, tokenPrefix); ok {
		payload, sig, ok := strings.Cut(rest, ".")
		if !ok || !hmac.Equal([]byte(sig), []byte(a.sign(payload))) {
			return Principal{}, status.Error(codes.Unauthenticated, "invalid bearer token")
		}
		body, err := base64.RawURLEncoding.DecodeString(payload)
		var c tokenClaims
		if err != nil || json.Unmarshal(body, &c) != nil {
			return Principal{}, status.Error(codes.Unauthenticated, "invalid bearer token")
		}
		if a.now().Unix() >= c.Exp {
			return Principal{}, status.Error(codes.Unauthenticated, "bearer token expired: authenticate again")
		}
		if u, ok := a.users[c.Sub]; !ok || u.Realm != c.Realm {
			return Principal{}, status.Error(codes.Unauthenticated, "bearer token names an unknown principal")
		}
		return Principal{Name: c.Sub, Realm: c.Realm}, nil
	}
	h := sha256.Sum256([]byte(token))
	for k, t := range a.tokens {
		if subtle.ConstantTimeCompare(k[:], h[:]) == 1 {
			return Principal{Name: t.Name, Realm: t.Realm}, nil
		}
	}
	return Principal{}, status.Error(codes.Unauthenticated, "invalid bearer token")
}

// authenticate resolves the caller from the incoming metadata. issued is
// the bearer token to hand back when the caller logged in with Basic.
func (a *Authenticator) authenticate(ctx context.Context) (p Principal, issued string, err error) {
	if !a.enabled {
		return Anonymous, "", nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(authHeader)
	if len(vals) == 0 {
		return Principal{}, "", status.Error(codes.Unauthenticated, "authentication required: send Basic credentials or a bearer token")
	}
	scheme, cred, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	cred = strings.TrimSpace(cred)
	switch strings.ToLower(scheme) {
	case bearerScheme:
		p, err := a.VerifyToken(cred)
		return p, "", err
	case basicScheme:
		user, pass, err := basicCredentials(cred)
		if err != nil {
			return Principal{}, "", err
		}
		p, err := a.login(ctx, clientAddr(ctx), user, pass)
		if err != nil {
			return Principal{}, "", err
		}
		return p, a.IssueToken(p), nil
	default:
		return Principal{}, "", status.Errorf(codes.Unauthenticated, "unsupported authorization scheme %q", scheme)
	}
}

func bearerMD(token string) metadata.MD {
	return metadata.Pairs(authHeader, "Bearer "+token)
}

// UnaryInterceptor authenticates unary calls.
func (a *Authenticator) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if strings.HasPrefix(info.FullMethod, healthPrefix) {
			return handler(ctx, req)
		}
		p, issued, err := a.authenticate(ctx)
		if err != nil {
			return nil, err
		}
		if issued != "" {
			_ = grpc.SetHeader(ctx, bearerMD(issued))
		}
		return handler(NewContext(ctx, p), req)
	}
}

type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s principalStream) Context() context.Context { return s.ctx }

// StreamInterceptor authenticates streaming calls, the Flight handshake
// included: a handshake with Basic credentials answers with the bearer
// token in the response header and trailer, which is where Flight clients
// (ADBC, the JDBC driver, pyarrow) look for it.
func (a *Authenticator) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if strings.HasPrefix(info.FullMethod, healthPrefix) {
			return handler(srv, ss)
		}
		p, issued, err := a.authenticate(ss.Context())
		if err != nil {
			return err
		}
		if issued != "" {
			md := bearerMD(issued)
			if err := ss.SetHeader(md); err != nil && !errors.Is(err, context.Canceled) {
				return status.Errorf(codes.Internal, "set auth header: %v", err)
			}
			ss.SetTrailer(md)
		}
		return handler(srv, principalStream{ServerStream: ss, ctx: NewContext(ss.Context(), p)})
	}
}
