"""tls_certs.py - test certificates made with the openssl command line.

    pki = Pki(dir)                       # a CA in dir/ca.crt, dir/ca.key
    crt, key = pki.issue("api", dns=["localhost"], ips=["127.0.0.1"])       # server
    crt, key = pki.issue("node-1", client=True)                              # client (CN = node)
    crt, key = pki.issue("old", expired=True)                                # validity in 2020
Keys are EC P-256, files mode 0600; every certificate is signed by the CA."""
import os
import subprocess

CA_CNF = """
[ca]
default_ca = ca_default
[ca_default]
dir = {d}
database = {d}/index.txt
new_certs_dir = {d}/newcerts
serial = {d}/serial
default_md = sha256
policy = policy_any
copy_extensions = copy
unique_subject = no
[policy_any]
commonName = supplied
"""


def _run(args, cwd):
    r = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(args), r.stdout))
    return r.stdout


class Pki:
    def __init__(self, d, name="muster-test-ca"):
        self.dir = d
        os.makedirs(os.path.join(d, "newcerts"), exist_ok=True)
        self.ca_crt = os.path.join(d, "ca.crt")
        self.ca_key = os.path.join(d, "ca.key")
        with open(os.path.join(d, "index.txt"), "w"):
            pass
        with open(os.path.join(d, "serial"), "w") as f:
            f.write("1000\n")
        with open(os.path.join(d, "ca.cnf"), "w") as f:
            f.write(CA_CNF.format(d=d))
        _run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
              "-nodes", "-keyout", self.ca_key, "-out", self.ca_crt, "-days", "3", "-subj",
              "/CN=" + name, "-addext", "basicConstraints=critical,CA:true",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"], d)
        os.chmod(self.ca_key, 0o600)

    def issue(self, cn, dns=(), ips=(), client=False, expired=False, prefix=None):
        prefix = os.path.join(self.dir, prefix or cn)
        key, csr, crt = prefix + ".key", prefix + ".csr", prefix + ".crt"
        san = ["DNS:" + n for n in dns] + ["IP:" + i for i in ips]
        args = ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=" + cn,
                "-addext", "extendedKeyUsage=" + ("clientAuth" if client else "serverAuth")]
        if san:
            args += ["-addext", "subjectAltName=" + ",".join(san)]
        _run(args, self.dir)
        os.chmod(key, 0o600)
        ca = ["openssl", "ca", "-batch", "-config", os.path.join(self.dir, "ca.cnf"),
              "-cert", self.ca_crt, "-keyfile", self.ca_key, "-in", csr, "-out", crt, "-notext"]
        if expired:
            ca += ["-startdate", "20200101000000Z", "-enddate", "20200201000000Z"]
        else:
            ca += ["-days", "2"]
        _run(ca, self.dir)
        return crt, key
