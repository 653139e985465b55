/*
 * Dropbear's build options for extrescue: keys only, nothing forwarded that a
 * rescue session does not need. Copied into the build folder as
 * localoptions.h, which Dropbear reads after its defaults.
 */

/* No passwords at all: neither the server nor the client asks for one. */
#define DROPBEAR_SVR_PASSWORD_AUTH 0
#define DROPBEAR_CLI_PASSWORD_AUTH 0
#define DROPBEAR_USE_PASSWORD_ENV 0
#define DROPBEAR_SVR_PAM_AUTH 0

/* No X11 or agent forwarding; TCP forwarding stays (a tunnel to a collector). */
#define DROPBEAR_X11FWD 0
#define DROPBEAR_SVR_AGENTFWD 0
#define DROPBEAR_CLI_AGENTFWD 0

/* No sftp-server in the image: scp works in its classic mode (OpenSSH 9: scp -O). */
#define DROPBEAR_SFTPSERVER 0

/* Host keys are made at boot by the rescue system, ed25519 and ECDSA only;
 * no RSA or DSS host key is ever needed. */
#define DROPBEAR_DSS 0

/* Where the image keeps things. */
#define DSS_PRIV_FILENAME "/run/dropbear/dss_host_key"
#define RSA_PRIV_FILENAME "/run/dropbear/rsa_host_key"
#define ECDSA_PRIV_FILENAME "/run/dropbear/ecdsa_host_key"
#define ED25519_PRIV_FILENAME "/run/dropbear/ed25519_host_key"
#define DROPBEAR_PIDFILE "/run/dropbear.pid"
#define DROPBEAR_PATH_SSH_PROGRAM "/usr/bin/dbclient"
#define DEFAULT_PATH "/usr/sbin:/usr/bin:/sbin:/bin"
#define DEFAULT_ROOT_PATH "/usr/sbin:/usr/bin:/sbin:/bin"
#define DO_MOTD 0
