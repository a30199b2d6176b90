#!/usr/bin/env bash
# A single-node Apache Kafka (KRaft) on loopback with authentication,
# encryption and ACLs, for the security suite (scripts/test-security.sh) and
# for trying onceflow's TLS and SASL flags by hand. See docs/security.md.
#
#   scripts/kafka-secure.sh up      start it; the last line of stdout is the
#                                   path of an env file (KEY=VALUE lines) that
#                                   names its listeners, certificates and users
#   scripts/kafka-secure.sh down    stop it and remove its data and certificates
#   scripts/kafka-secure.sh status  tell whether it runs (exit 0) or not (exit 1)
#
# The broker (scripts/kafka.sh with a configuration of its own) listens on:
#   SASL_PLAINTEXT  PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (also the
#                   inter-broker listener, as user admin with PLAIN)
#   SSL             TLS with a client certificate required; the principal is
#                   the certificate's CN (CN=app is User:app)
#   SASL_SSL        TLS (server certificate only) and the three mechanisms
#   CONTROLLER      SASL_PLAINTEXT with PLAIN, user admin
# Certificates are made here with openssl (a CA, the broker's certificate for
# 127.0.0.1 and localhost, a client certificate for CN=app), valid for 30 days.
# Users: admin (a super user) and app, each with PLAIN and both SCRAM
# mechanisms (SCRAM credentials written at format time), random passwords.
# The StandardAuthorizer is on and denies what no ACL allows: app can do
# nothing until ACLs are granted to it (the tests grant them as admin).
#
# Environment (all optional):
#   ONCEFLOW_KAFKA_DIR     state folder; default .kafka-secure (the broker's own
#                          folder is broker/ inside it)
#   KAFKA_PORT             SASL_PLAINTEXT port; default 19192, or the next free one
#   KAFKA_CONTROLLER_PORT  controller port; default the next free one after it
#   KAFKA_SSL_PORT         SSL port; default the next free one after the controller's
#   KAFKA_SASL_SSL_PORT    SASL_SSL port; default the next free one after SSL's
# and the other settings of scripts/kafka.sh (KAFKA_JAVA, KAFKA_HEAP_OPTS, ...).
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

DIR="${ONCEFLOW_KAFKA_DIR:-$ONCEFLOW_ROOT/.kafka-secure}"
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac
DIR="${DIR%/}"
case "$DIR" in "" | / | "$ONCEFLOW_ROOT" | "$HOME" | /tmp | /work) die "refusing ONCEFLOW_KAFKA_DIR=${ONCEFLOW_KAFKA_DIR:-} as state folder" ;; esac
TLS_DIR="$DIR/tls"
ENV_FILE="$DIR/secure.env"
KAFKA_SH="$ONCEFLOW_ROOT/scripts/kafka.sh"

usage() {
	echo "usage: $0 up | down | status" >&2
	exit 2
}

# broker runs scripts/kafka.sh on the broker's own folder.
broker() { ONCEFLOW_KAFKA_DIR="$DIR/broker" "$KAFKA_SH" "$@"; }

# password prints a random password of 24 letters and digits.
password() {
	local p=""
	while [ ${#p} -lt 24 ]; do
		p+="$(head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
	done
	echo "${p:0:24}"
}

# make_certs writes the CA, the broker's keystore and the client's PEM files
# into $TLS_DIR. KEYSTORE_PASSWORD protects the broker's PKCS#12 keystore.
make_certs() {
	command -v openssl >/dev/null 2>&1 || apt_install openssl
	mkdir -p "$TLS_DIR"
	(
		cd "$TLS_DIR"
		local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
		openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 30 -subj "/CN=onceflow test CA" \
			-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
		# sign NAME EXTENSIONS: NAME.key and NAME.pem, signed by the CA.
		sign() {
			openssl req "${ec[@]}" -keyout "$1.key" -out "$1.csr" -subj "/CN=$1" 2>/dev/null
			printf '%s\n' "$2" >"$1.ext"
			openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
				-extfile "$1.ext" -out "$1.pem" 2>/dev/null
			rm -f "$1.csr" "$1.ext"
		}
		sign localhost "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
		sign app "extendedKeyUsage=clientAuth"
		openssl pkcs12 -export -in localhost.pem -inkey localhost.key -certfile ca.pem -name broker \
			-out broker.p12 -passout "pass:$KEYSTORE_PASSWORD"
		chmod 600 ./*.key broker.p12
	)
}

# jaas_plain USER PASSWORD prints a PlainLoginModule line: the broker logs in
# as USER (inter-broker, controller) and accepts admin and app.
jaas_plain() {
	echo "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"$1\" password=\"$2\" user_admin=\"$ADMIN_PASSWORD\" user_app=\"$APP_PASSWORD\";"
}

write_config() {
	local scram="org.apache.kafka.common.security.scram.ScramLoginModule required;" l
	{
		echo "listeners=SASL_PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT,SSL://127.0.0.1:$SSL_PORT,SASL_SSL://127.0.0.1:$SASL_SSL_PORT"
		echo "advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$PORT,SSL://127.0.0.1:$SSL_PORT,SASL_SSL://127.0.0.1:$SASL_SSL_PORT"
		echo "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT"
		echo "inter.broker.listener.name=SASL_PLAINTEXT"
		echo "sasl.mechanism.inter.broker.protocol=PLAIN"
		echo "sasl.mechanism.controller.protocol=PLAIN"
		echo "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
		echo "listener.name.controller.sasl.enabled.mechanisms=PLAIN"
		echo "listener.name.controller.plain.sasl.jaas.config=$(jaas_plain admin "$ADMIN_PASSWORD")"
		for l in sasl_plaintext sasl_ssl; do
			echo "listener.name.$l.plain.sasl.jaas.config=$(jaas_plain admin "$ADMIN_PASSWORD")"
			echo "listener.name.$l.scram-sha-256.sasl.jaas.config=$scram"
			echo "listener.name.$l.scram-sha-512.sasl.jaas.config=$scram"
		done
		echo "ssl.keystore.type=PKCS12"
		echo "ssl.keystore.location=$TLS_DIR/broker.p12"
		echo "ssl.keystore.password=$KEYSTORE_PASSWORD"
		echo "ssl.key.password=$KEYSTORE_PASSWORD"
		echo "ssl.truststore.type=PEM"
		echo "ssl.truststore.location=$TLS_DIR/ca.pem"
		echo "listener.name.ssl.ssl.client.auth=required"
		echo "ssl.principal.mapping.rules=RULE:^CN=([^,]+)\$/\$1/,DEFAULT"
		echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
		echo "super.users=User:admin"
		echo "allow.everyone.if.no.acl.found=false"
	} >"$DIR/server-extra.properties"
	{
		local m
		for m in SCRAM-SHA-256 SCRAM-SHA-512; do
			echo "--add-scram"
			echo "$m=[name=admin,password=$ADMIN_PASSWORD]"
			echo "--add-scram"
			echo "$m=[name=app,password=$APP_PASSWORD]"
		done
	} >"$DIR/format-args"
	{
		echo "security.protocol=SASL_PLAINTEXT"
		echo "sasl.mechanisms=PLAIN"
		echo "sasl.username=admin"
		echo "sasl.password=$ADMIN_PASSWORD"
	} >"$DIR/kcat-admin.properties"
	chmod 600 "$DIR/server-extra.properties" "$DIR/format-args" "$DIR/kcat-admin.properties"
}

write_env() {
	cat >"$ENV_FILE" <<EOF
# Written by scripts/kafka-secure.sh: the secured test broker.
ONCEFLOW_SECURE_SASL_PLAINTEXT=127.0.0.1:$PORT
ONCEFLOW_SECURE_SSL=127.0.0.1:$SSL_PORT
ONCEFLOW_SECURE_SASL_SSL=127.0.0.1:$SASL_SSL_PORT
ONCEFLOW_SECURE_CA=$TLS_DIR/ca.pem
ONCEFLOW_SECURE_CA_KEY=$TLS_DIR/ca.key
ONCEFLOW_SECURE_CLIENT_CERT=$TLS_DIR/app.pem
ONCEFLOW_SECURE_CLIENT_KEY=$TLS_DIR/app.key
ONCEFLOW_SECURE_ADMIN_USER=admin
ONCEFLOW_SECURE_ADMIN_PASSWORD=$ADMIN_PASSWORD
ONCEFLOW_SECURE_USER=app
ONCEFLOW_SECURE_PASSWORD=$APP_PASSWORD
ONCEFLOW_SECURE_KCAT_ADMIN=$DIR/kcat-admin.properties
EOF
	chmod 600 "$ENV_FILE"
}

cmd_up() {
	if [ -f "$ENV_FILE" ] && broker status >/dev/null 2>&1; then
		log "already running"
		echo "$ENV_FILE"
		return
	fi
	rm -rf "$DIR"
	mkdir -p "$DIR"
	chmod 700 "$DIR"
	PORT="${KAFKA_PORT:-$(free_port 19192)}"
	CPORT="${KAFKA_CONTROLLER_PORT:-$(free_port $((PORT + 1)))}"
	SSL_PORT="${KAFKA_SSL_PORT:-$(free_port $((CPORT + 1)))}"
	SASL_SSL_PORT="${KAFKA_SASL_SSL_PORT:-$(free_port $((SSL_PORT + 1)))}"
	local p
	for p in "$PORT" "$CPORT" "$SSL_PORT" "$SASL_SSL_PORT"; do
		! port_in_use "$p" || die "port $p is in use"
	done
	[ "$(printf '%s\n' "$PORT" "$CPORT" "$SSL_PORT" "$SASL_SSL_PORT" | sort -u | wc -l)" -eq 4 ] ||
		die "the four ports must differ: $PORT $CPORT $SSL_PORT $SASL_SSL_PORT"
	ADMIN_PASSWORD="$(password)"
	APP_PASSWORD="$(password)"
	KEYSTORE_PASSWORD="$(password)"
	make_certs
	write_config
	KAFKA_PORT="$PORT" KAFKA_CONTROLLER_PORT="$CPORT" \
		KAFKA_EXTRA_CONFIG="$DIR/server-extra.properties" KAFKA_FORMAT_ARGS_FILE="$DIR/format-args" \
		KAFKA_KCAT_CONFIG="$DIR/kcat-admin.properties" broker up >/dev/null
	write_env
	log "secured broker ready: SASL_PLAINTEXT 127.0.0.1:$PORT, SSL 127.0.0.1:$SSL_PORT (client certificate required)," \
		"SASL_SSL 127.0.0.1:$SASL_SSL_PORT; users admin (super user) and app; env file $ENV_FILE"
	echo "$ENV_FILE"
}

cmd_down() {
	if [ -d "$DIR/broker" ]; then
		broker down
	else
		log "no secured broker in $DIR"
	fi
	rm -rf "$DIR"
}

cmd_status() {
	if [ -f "$ENV_FILE" ] && broker status >/dev/null 2>&1; then
		echo "running: env file $ENV_FILE"
	else
		echo "not running"
		return 1
	fi
}

[ $# -eq 1 ] || usage
case "$1" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
*) usage ;;
esac
