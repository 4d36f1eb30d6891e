#!/usr/bin/env python3
"""Static checks of deploy/ (called by deploy/check; standard library + PyYAML only).

Prints one line per check: `ok   …`, `FAIL …` or `skip …`. Writes what the live checks in deploy/check
need (runtime package list, HEALTHCHECK commands) into the directory given as --out.

usage: check_files.py --repo ROOT --build-command CMD --help-text FILE --out DIR
"""
import argparse
import fnmatch
import json
import os
import re
import shlex
import sys

try:
    import yaml
except ImportError:  # PyYAML is in every Python we ship with; say so instead of crashing.
    print("FAIL python3 has no PyYAML (pip install pyyaml): YAML cannot be checked")
    sys.exit(0)

RESULTS = []


def ok(what):
    print(f"ok   {what}")


def fail(what, why):
    print(f"FAIL {what}: {why}")


def skip(what, why):
    print(f"skip {what}: {why}")


def check(what, condition, why=""):
    (ok(what) if condition else fail(what, why or "not satisfied"))
    return condition


# ---- the variables `bouncer serve --help` documents ------------------------------------------------------

def serve_variables(help_text):
    """{name: default or None} from the help text's `  NAME  help (default X)` lines."""
    variables = {}
    for line in help_text.splitlines():
        m = re.match(r"^  ((?:BOUNCER_[A-Z_]+)|DATABASE_URL)\s+(.*)$", line)
        if not m:
            continue
        default = None
        d = re.search(r"\(default:? (.*)\)\s*$", m.group(2))
        if d:
            text = d.group(1)
            depth, cut = 0, len(text)
            for i, ch in enumerate(text):  # stop at the first ", " outside parentheses: "64, 0 = off" -> "64"
                depth += {"(": 1, ")": -1}.get(ch, 0)
                if depth == 0 and text[i:i + 2] == ", ":
                    cut = i
                    break
            default = text[:cut]
        variables[m.group(1)] = default
    return variables


SECRET_VARIABLES = {"BOUNCER_ADMIN_TOKEN", "DATABASE_URL"}


def seconds(value):
    """'20s' / '20' / 30 -> 20.0 (compose and systemd durations as used here)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|sec)?\s*", str(value))
    return float(m.group(1)) if m else None


# ---- Dockerfile -------------------------------------------------------------------------------------------

def parse_dockerfile(text):
    """[(INSTRUCTION, arguments)] with continuation lines joined and comments dropped."""
    instructions, current = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if current and line.startswith("#"):
            continue  # comments inside a continued instruction are ignored by Docker too
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        word, _, rest = current.strip().partition(" ")
        instructions.append((word.upper(), rest.strip()))
        current = ""
    if current.strip():
        word, _, rest = current.strip().partition(" ")
        instructions.append((word.upper(), rest.strip()))
    return instructions


def exec_form(arguments):
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def apt_packages(run_arguments):
    """Package names after `apt-get install` (options dropped) in one RUN."""
    packages = []
    for segment in re.split(r"&&|;", run_arguments):
        words = shlex.split(segment)
        if "apt-get" in words and "install" in words:
            after = words[words.index("install") + 1:]
            packages += [w for w in after if not w.startswith("-")]
    return packages


def embedded_roots(swift_source):
    """{name: bytes} for every `static let NAME = der(""" base64 """)` in AppleRootCertificates.swift (the roots'
    DER as base64 text since the roots got one home; a `[UInt8]` literal of hex bytes is read too)."""
    import base64
    roots = {}
    for m in re.finditer(r"static let (\w+) = der\(\"\"\"(.*?)\"\"\"\)", swift_source, re.S):
        roots[m.group(1)] = base64.b64decode("".join(m.group(2).split()))
    for m in re.finditer(r"static let (\w+): \[UInt8\] = \[(.*?)\]", swift_source, re.S):
        roots[m.group(1)] = bytes(int(h, 16) for h in re.findall(r"0x([0-9A-Fa-f]{2})", m.group(2)))
    return roots


def check_dockerfile(repo, build_command, out):
    path = os.path.join(repo, "deploy", "Dockerfile")
    text = open(path).read()
    instructions = parse_dockerfile(text)
    try:
        from dockerfile_parse import DockerfileParser  # optional cross-check with a real parser
        parser = DockerfileParser(path=path)
        theirs = [i["instruction"] for i in parser.structure if i["instruction"] != "COMMENT"]
        check("Dockerfile parses with dockerfile-parse the same as here",
              theirs == [i for i, _ in instructions], f"dockerfile-parse {theirs} vs {[i for i, _ in instructions]}")
    except ImportError:
        skip("Dockerfile cross-parse", "dockerfile-parse not installed (pip install dockerfile-parse)")

    known = {"FROM", "ARG", "RUN", "WORKDIR", "COPY", "ENV", "USER", "EXPOSE", "HEALTHCHECK", "STOPSIGNAL",
             "ENTRYPOINT", "CMD", "LABEL"}
    unknown = [i for i, _ in instructions if i not in known]
    check("Dockerfile has only known instructions", not unknown, f"unknown {unknown}")

    args = {}
    for instruction, arguments in instructions:
        if instruction == "FROM":
            break
        if instruction == "ARG" and "=" in arguments:
            k, v = arguments.split("=", 1)
            args[k.strip()] = v.strip()

    def expand(s):
        return re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), s)

    stages, current = [], None
    for instruction, arguments in instructions:
        if instruction == "FROM":
            current = {"from": expand(arguments), "instructions": []}
            stages.append(current)
        elif current is not None:
            current["instructions"].append((instruction, arguments))
    if not check("Dockerfile is multi-stage: build + runtime", len(stages) == 2, f"{len(stages)} stages"):
        return
    build, runtime = stages
    check("build stage is the official Swift 6 image on bookworm",
          re.fullmatch(r"swift:6\.\d+(\.\d+)?-bookworm AS build", build["from"]) is not None, build["from"])
    check("runtime stage is debian:bookworm-slim", runtime["from"] == "debian:bookworm-slim", runtime["from"])

    build_runs = " ".join(a for i, a in build["instructions"] if i == "RUN")
    check("build stage runs the CI build command", build_command in build_runs,
          f"`{build_command}` not in the build stage's RUN")
    build_packages = set(sum((apt_packages(a) for i, a in build["instructions"] if i == "RUN"), []))
    check("build stage installs libpq-dev libssl-dev pkg-config",
          build_packages == {"libpq-dev", "libssl-dev", "pkg-config"}, f"installs {sorted(build_packages)}")

    runtime_runs = [a for i, a in runtime["instructions"] if i == "RUN"]
    runtime_packages = sum((apt_packages(a) for a in runtime_runs), [])
    check("runtime installs only libpq5 libssl3 ca-certificates",
          sorted(runtime_packages) == ["ca-certificates", "libpq5", "libssl3"], f"installs {runtime_packages}")
    check("runtime apt-get uses --no-install-recommends and clears lists",
          all("--no-install-recommends" in a and "rm -rf /var/lib/apt/lists" in a
              for a in runtime_runs if "apt-get" in a))
    with open(os.path.join(out, "runtime-packages"), "w") as f:
        f.write(" ".join(runtime_packages) + "\n")

    def last(instruction):
        values = [a for i, a in runtime["instructions"] if i == instruction]
        return values[-1] if values else None

    user = last("USER") or ""
    uid = user.split(":")[0]
    check("runtime runs as a numeric non-root user", uid.isdigit() and int(uid) != 0, f"USER {user!r}")
    envs = " ".join(a for i, a in runtime["instructions"] if i == "ENV")
    check("ENV BOUNCER_HOST=0.0.0.0", re.search(r"(^|\s)BOUNCER_HOST=0\.0\.0\.0(\s|$)", envs) is not None, envs)
    check("EXPOSE 8080", last("EXPOSE") == "8080", f"EXPOSE {last('EXPOSE')}")
    check('ENTRYPOINT ["bouncer"]', exec_form(last("ENTRYPOINT") or "") == ["bouncer"], last("ENTRYPOINT"))
    check('CMD ["serve"]', exec_form(last("CMD") or "") == ["serve"], last("CMD"))
    check("STOPSIGNAL SIGTERM", last("STOPSIGNAL") in (None, "SIGTERM"), last("STOPSIGNAL"))

    healthcheck = last("HEALTHCHECK") or ""
    m = re.search(r"\bCMD\s+(\[.*\])\s*$", healthcheck)
    command = exec_form(m.group(1)) if m else None
    if check("HEALTHCHECK is exec form on /healthz", command is not None and "/healthz" in " ".join(command),
             healthcheck[:120]):
        with open(os.path.join(out, "healthcheck.json"), "w") as f:
            json.dump(command, f)
        binary = command[0]
        check("HEALTHCHECK needs no package beyond the runtime ones (bash is in debian slim)",
              binary in ("bash", "/bin/bash", "sh", "/bin/sh") and "curl" not in healthcheck and "wget" not in healthcheck,
              binary)

    ignore_path = os.path.join(repo, "deploy", "Dockerfile.dockerignore")
    ignores = [l.strip() for l in open(ignore_path) if l.strip() and not l.startswith("#")] if os.path.exists(ignore_path) else []
    check("Dockerfile.dockerignore keeps .build and .git out of the context",
          ".git" in ignores and any(p.startswith(".build") for p in ignores), str(ignores))
    for instruction, arguments in build["instructions"] + runtime["instructions"]:
        if instruction != "COPY" or arguments.startswith("--from"):
            continue
        sources = shlex.split(arguments)[:-1]
        for source in sources:
            local = os.path.join(repo, source)
            ignored = [p for p in ignores if fnmatch.fnmatch(source.rstrip("/"), p)]
            check(f"COPY {source} exists and is in the build context", os.path.exists(local) and not ignored,
                  "missing" if not os.path.exists(local) else f"excluded by {ignored}")

    swift = open(os.path.join(repo, "Sources", "AppStoreJWS", "AppleRootCertificates.swift")).read()
    embedded = embedded_roots(swift)
    files = {"g3": "AppleRootCA-G3.cer", "g2": "AppleRootCA-G2.cer"}
    for name, file_name in files.items():
        path = os.path.join(repo, "deploy", "apple-roots", file_name)
        same = os.path.exists(path) and name in embedded and open(path, "rb").read() == embedded[name]
        check(f"deploy/apple-roots/{file_name} is byte-identical to the root compiled into the binary", same,
              "differs or missing")


# ---- compose ----------------------------------------------------------------------------------------------

def check_compose(repo, variables, out):
    path = os.path.join(repo, "deploy", "compose.yaml")
    try:
        compose = yaml.safe_load(open(path))
    except yaml.YAMLError as e:
        fail("compose.yaml parses", str(e))
        return
    ok("compose.yaml parses")
    services = compose.get("services", {})
    check("compose has postgres, migrate, bouncer", set(services) == {"postgres", "migrate", "bouncer"},
          str(sorted(services)))
    pg, migrate, bouncer = services.get("postgres", {}), services.get("migrate", {}), services.get("bouncer", {})
    check("postgres is PostgreSQL 15", str(pg.get("image", "")).startswith("postgres:15"), pg.get("image"))
    check("postgres has a pg_isready healthcheck", "pg_isready" in json.dumps(pg.get("healthcheck", {})))
    check("migrate runs `bouncer migrate` once", migrate.get("command") == ["migrate"] and migrate.get("restart") == "no",
          f"{migrate.get('command')} restart={migrate.get('restart')}")
    check("migrate waits for postgres healthy",
          migrate.get("depends_on", {}).get("postgres", {}).get("condition") == "service_healthy")
    check("bouncer runs `serve`", bouncer.get("command") == ["serve"], bouncer.get("command"))
    deps = bouncer.get("depends_on", {})
    check("bouncer waits for migrate to complete successfully",
          deps.get("migrate", {}).get("condition") == "service_completed_successfully", str(deps))
    check("bouncer waits for postgres healthy", deps.get("postgres", {}).get("condition") == "service_healthy")
    for name, service in (("migrate", migrate), ("bouncer", bouncer)):
        check(f"{name} reads deploy/.env", ".env" in (service.get("env_file") or []), service.get("env_file"))
        build = service.get("build", {})
        check(f"{name} builds deploy/Dockerfile from the repository root",
              build.get("dockerfile") == "deploy/Dockerfile" and os.path.normpath(
                  os.path.join(repo, "deploy", build.get("context", ""))) == os.path.normpath(repo), str(build))
    test = (bouncer.get("healthcheck") or {}).get("test") or []
    if check("bouncer has a /healthz healthcheck", "/healthz" in " ".join(test), str(test)):
        # Compose turns $$ into $ and the container listens on 8080; the live check substitutes its port.
        command = [part.replace("$$", "$") for part in test[1:]] if test[:1] == ["CMD"] else None
        if command:
            with open(os.path.join(out, "compose-healthcheck.json"), "w") as f:
                json.dump(command, f)
    grace = seconds(bouncer.get("stop_grace_period", "10s"))
    drain = float(variables.get("BOUNCER_SHUTDOWN_GRACE_SECONDS") or 10)
    check("bouncer stop_grace_period exceeds the drain", grace is not None and grace > drain,
          f"{grace} <= {drain}")

    env_path = os.path.join(repo, "deploy", ".env.example")
    env = {}
    mentioned = set()
    for line in open(env_path):
        line = line.strip()
        m = re.match(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$", line)
        if not m:
            continue
        if line.startswith("#"):
            mentioned.add(m.group(1))
        else:
            env[m.group(1)] = m.group(2)
    check(".env.example sets BOUNCER_ADMIN_TOKEN (>= 32 chars), DATABASE_URL, POSTGRES_PASSWORD",
          len(env.get("BOUNCER_ADMIN_TOKEN", "")) >= 32 and "DATABASE_URL" in env and "POSTGRES_PASSWORD" in env,
          str(sorted(env)))
    check(".env.example values are placeholders", all("CHANGE_ME" in v for k, v in env.items()
                                                      if k in SECRET_VARIABLES | {"POSTGRES_PASSWORD"}))
    url = env.get("DATABASE_URL", "")
    check(".env.example DATABASE_URL uses POSTGRES_PASSWORD and the postgres service",
          f":{env.get('POSTGRES_PASSWORD')}@postgres:5432/" in url, url)
    unknown = sorted(k for k in set(env) | mentioned if k.startswith("BOUNCER_") and k not in variables)
    check(".env.example names only real BOUNCER_* variables", not unknown, str(unknown))


# ---- Kubernetes -------------------------------------------------------------------------------------------

def labels_match(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_kubernetes(repo, variables):
    directory = os.path.join(repo, "deploy", "k8s")
    documents = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith((".yaml", ".yml")):
            continue
        try:
            docs = [d for d in yaml.safe_load_all(open(os.path.join(directory, name))) if d is not None]
        except yaml.YAMLError as e:
            fail(f"k8s/{name} parses", str(e))
            continue
        ok(f"k8s/{name} parses ({len(docs)} document{'s' if len(docs) != 1 else ''})")
        documents += [(name, d) for d in docs]

    by_kind = {}
    for name, doc in documents:
        if doc.get("kind") == "Kustomization":
            missing = [r for r in doc.get("resources", []) if not os.path.exists(os.path.join(directory, r))]
            check("kustomization lists existing files and not the example Secret",
                  not missing and "secret.example.yaml" not in doc.get("resources", []), str(missing))
            continue
        required = all([doc.get("apiVersion"), doc.get("kind"), (doc.get("metadata") or {}).get("name")])
        check(f"k8s/{name} {doc.get('kind')} has apiVersion, kind, metadata.name", required)
        by_kind.setdefault(doc.get("kind"), []).append((name, doc))

    for kind in ("Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Job", "ConfigMap", "Secret"):
        check(f"k8s has a {kind}", kind in by_kind)
    if not all(k in by_kind for k in ("Deployment", "ConfigMap")):
        return
    config = by_kind["ConfigMap"][0][1].get("data", {})
    unknown = sorted(k for k in config if k not in variables)
    check("ConfigMap keys are real serve variables", not unknown, str(unknown))
    check("ConfigMap holds no secret", not (set(config) & SECRET_VARIABLES), str(set(config) & SECRET_VARIABLES))
    check("ConfigMap values are strings", all(isinstance(v, str) for v in config.values()))

    _, deployment = by_kind["Deployment"][0]
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    pod_labels = spec["template"]["metadata"]["labels"]
    check("Deployment selector matches its pod labels", labels_match(spec["selector"]["matchLabels"], pod_labels))
    container = pod["containers"][0]
    check("Deployment runs `serve`", container.get("args") == ["serve"], container.get("args"))

    def probe_path(probe):
        return ((container.get(probe) or {}).get("httpGet") or {}).get("path")
    check("readinessProbe GET /readyz", probe_path("readinessProbe") == "/readyz", probe_path("readinessProbe"))
    check("livenessProbe GET /healthz", probe_path("livenessProbe") == "/healthz", probe_path("livenessProbe"))
    port_names = {p.get("name") for p in container.get("ports", [])}
    probe_ports = {((container.get(p) or {}).get("httpGet") or {}).get("port")
                   for p in ("readinessProbe", "livenessProbe", "startupProbe") if container.get(p)}
    check("probes use the container's named port", probe_ports <= port_names, f"{probe_ports} vs {port_names}")
    resources = container.get("resources", {})
    check("resources have requests and limits for cpu and memory",
          all(k in resources.get(s, {}) for s in ("requests", "limits") for k in ("cpu", "memory")), str(resources))

    def cpu(value):
        value = str(value)
        return float(value[:-1]) / 1000 if value.endswith("m") else float(value)
    if resources.get("limits", {}).get("cpu"):
        limit = cpu(resources["limits"]["cpu"])
        # Unset is fine: the default follows the pod's cgroup CPU quota; a pin must not exceed the limit.
        loops = config.get("BOUNCER_EVENT_LOOPS")
        check("BOUNCER_EVENT_LOOPS unset (follows the CPU limit) or at most the CPU limit",
              loops is None or 0 < int(loops) <= max(1, limit), f"{loops} loops, {limit} CPUs")
        check("BOUNCER_WORKERS pinned (to the database pool)", "BOUNCER_WORKERS" in config)
    security = container.get("securityContext", {})
    pod_security = pod.get("securityContext", {})
    check("non-root, read-only root filesystem, no privilege escalation, all capabilities dropped",
          pod_security.get("runAsNonRoot") is True and security.get("readOnlyRootFilesystem") is True
          and security.get("allowPrivilegeEscalation") is False
          and "ALL" in security.get("capabilities", {}).get("drop", []), f"{pod_security} {security}")
    check("runAsUser matches the image's USER 10001", pod_security.get("runAsUser") == 10001)
    grace = pod.get("terminationGracePeriodSeconds", 30)
    command = (((container.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command") or []
    sleep_action = (((container.get("lifecycle") or {}).get("preStop") or {}).get("sleep") or {}).get("seconds")
    pre_stop = float(command[1]) if command[:1] == ["sleep"] and len(command) == 2 else (sleep_action or 0)
    check("preStop sleeps so endpoints drain first", pre_stop > 0, str(command))
    drain = float(config.get("BOUNCER_SHUTDOWN_GRACE_SECONDS", variables.get("BOUNCER_SHUTDOWN_GRACE_SECONDS") or 10))
    check(f"terminationGracePeriodSeconds ({grace}) > preStop ({pre_stop:g}) + drain ({drain:g})",
          grace > pre_stop + drain)

    def secret_refs(containers):
        refs, literal = {}, []
        for c in containers:
            for e in c.get("env", []):
                ref = (e.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    refs[e["name"]] = ref
                elif e.get("name") in SECRET_VARIABLES:
                    literal.append(e["name"])
        return refs, literal
    refs, literal = secret_refs(pod["containers"])
    check("Deployment takes DATABASE_URL and BOUNCER_ADMIN_TOKEN from secretKeyRef",
          {"DATABASE_URL", "BOUNCER_ADMIN_TOKEN"} <= set(refs) and not literal, f"refs {sorted(refs)}, literal {literal}")
    check("Deployment reads the ConfigMap",
          any((s.get("configMapRef") or {}).get("name") == by_kind["ConfigMap"][0][1]["metadata"]["name"]
              for s in container.get("envFrom", [])))

    if "Service" in by_kind:
        service = by_kind["Service"][0][1]["spec"]
        check("Service selects the Deployment's pods", labels_match(service.get("selector"), pod_labels))
        check("Service targets the named http port",
              all(p.get("targetPort") in port_names | {8080} for p in service.get("ports", [])))
    if "HorizontalPodAutoscaler" in by_kind:
        hpa = by_kind["HorizontalPodAutoscaler"][0][1]["spec"]
        check("HPA scales the Deployment", hpa["scaleTargetRef"].get("kind") == "Deployment"
              and hpa["scaleTargetRef"].get("name") == deployment["metadata"]["name"])
        pool = int(config.get("BOUNCER_DB_POOL_SIZE", "8"))
        budget = hpa["maxReplicas"] * (pool + 1)
        check(f"maxReplicas x (pool + 1 migration connection) = {budget} < 97 (max_connections 100 - 3 reserved)",
              budget < 97)
        check("HPA minReplicas >= 2 (a PDB with one replica blocks node drains)", hpa.get("minReplicas", 1) >= 2)
    if "PodDisruptionBudget" in by_kind:
        pdb = by_kind["PodDisruptionBudget"][0][1]["spec"]
        check("PDB selects the Deployment's pods", labels_match(pdb["selector"].get("matchLabels"), pod_labels))
    if "Job" in by_kind:
        job = by_kind["Job"][0][1]["spec"]["template"]["spec"]
        jc = job["containers"][0]
        check("migration Job runs `bouncer migrate`", jc.get("args") == ["migrate"], jc.get("args"))
        check("migration Job restartPolicy Never", job.get("restartPolicy") == "Never")
        job_refs, job_literal = secret_refs(job["containers"])
        check("migration Job takes DATABASE_URL from secretKeyRef", "DATABASE_URL" in job_refs and not job_literal)
        check("migration Job is non-root with a read-only root filesystem",
              job.get("securityContext", {}).get("runAsNonRoot") is True
              and jc.get("securityContext", {}).get("readOnlyRootFilesystem") is True)
        check("migration Job uses the same image", jc.get("image") == container.get("image"))
    if "Secret" in by_kind:
        name, secret = by_kind["Secret"][0]
        text = open(os.path.join(directory, name)).read()
        values = list((secret.get("stringData") or {}).values()) + list((secret.get("data") or {}).values())
        check("the Secret manifest is an example with no real values",
              name == "secret.example.yaml" and "EXAMPLE" in text and all("EXAMPLE" in str(v) for v in values))
        keys = set((secret.get("stringData") or {}).keys()) | set((secret.get("data") or {}).keys())
        used = {r["key"] for r in refs.values()} | {r["key"] for r in secret_refs(
            by_kind.get("Job", [(None, {"spec": {"template": {"spec": {"containers": []}}}})])[0][1]
            ["spec"]["template"]["spec"]["containers"])[0].values()}
        check("every secretKeyRef key is in the example Secret", used <= keys, f"{used - keys}")


# ---- systemd ----------------------------------------------------------------------------------------------

def check_systemd(repo, variables):
    unit = {}
    section = None
    for line in open(os.path.join(repo, "deploy", "bouncer.service")):
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        unit.setdefault((section, key), []).append(value)

    def get(key):
        return (unit.get(("Service", key)) or [None])[-1]
    check("unit runs `bouncer serve` as a dedicated user",
          (get("ExecStart") or "").endswith("bouncer serve") and get("User") not in (None, "root"))
    check("unit reads an EnvironmentFile", get("EnvironmentFile") is not None)
    check("unit restarts on failure", get("Restart") == "on-failure")
    check("unit stops with SIGTERM", get("KillSignal") == "SIGTERM")
    stop = seconds(get("TimeoutStopSec") or "90s")
    drain = float(variables.get("BOUNCER_SHUTDOWN_GRACE_SECONDS") or 10)
    check(f"TimeoutStopSec ({stop}) > drain ({drain:g})", stop is not None and stop > drain)
    check("unit hardening: NoNewPrivileges, ProtectSystem=strict, empty CapabilityBoundingSet",
          get("NoNewPrivileges") == "yes" and get("ProtectSystem") == "strict" and get("CapabilityBoundingSet") == "")


# ---- the operations guide ---------------------------------------------------------------------------------

def check_guide(repo, variables):
    text = open(os.path.join(repo, "deploy", "README.md")).read()
    rows = {}
    for line in text.splitlines():
        if line.startswith("|"):
            for name in re.findall(r"`((?:BOUNCER_[A-Z_]+)|DATABASE_URL)`", line.split("|")[1] if line.count("|") > 2 else ""):
                rows.setdefault(name, line)  # the configuration table comes first
    missing = sorted(v for v in variables if v not in rows)
    check(f"deploy/README.md documents all {len(variables)} serve variables", not missing, str(missing))
    wrong = []
    for name, default in variables.items():
        if name in rows and default is not None:
            cells = [c.strip().strip("`") for c in rows[name].split("|")]
            if len(cells) < 3 or default.strip("`") not in cells[2]:
                wrong.append(f"{name}: help says {default!r}")
    check("deploy/README.md defaults match `bouncer serve --help`", not wrong, "; ".join(wrong))
    extra = sorted(set(re.findall(r"`(BOUNCER_[A-Z_]+)`", text)) - set(variables))
    check("deploy/README.md names no variable that does not exist", not extra, str(extra))
    for heading in ("/metrics", "Rate limits"):
        check(f"deploy/README.md has a section for {heading}",
              re.search(r"^#+ .*" + re.escape(heading), text, re.M | re.I) is not None)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", required=True)
    parser.add_argument("--build-command", required=True)
    parser.add_argument("--help-text", required=True)
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    variables = serve_variables(open(options.help_text).read())
    if not check("`bouncer serve --help` lists the variables", len(variables) >= 20, f"{len(variables)} found"):
        return
    check_dockerfile(options.repo, options.build_command, options.out)
    check_compose(options.repo, variables, options.out)
    check_kubernetes(options.repo, variables)
    check_systemd(options.repo, variables)
    check_guide(options.repo, variables)


if __name__ == "__main__":
    main()
