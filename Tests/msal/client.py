"""Microsoft's own token libraries against a live notty serve (TLS).

Usage: client.py BASE_URL CLIENT_ID CLIENT_SECRET UNS_ID
BASE_URL is https://HOST:PORT; REQUESTS_CA_BUNDLE names the service's certificate.
Prints one JSON line per step; exits non-zero when a step does not go as a Graph app
server written with these libraries expects.
"""
import json
import sys
import urllib.parse

import msal
import requests
from azure.identity import ClientSecretCredential

base, client_id, client_secret, uns_id = sys.argv[1:5]
tenant = "contoso.onmicrosoft.com"
scope = "https://graph.microsoft.com/.default"
failed = False


def say(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


def publish(token, notification_id, title):
    body = {"targetHostName": "ci.example.com", "appNotificationId": notification_id,
            "payload": {"visualContent": {"title": title, "body": "sent with a library token"}},
            "priority": "High"}
    answer = requests.post(base + "/beta/me/notifications", json=body, timeout=30,
                           headers={"Authorization": "Bearer " + token, "X-UNS-ID": uns_id})
    return answer.status_code


# MSAL for Python, as Microsoft's daemon samples use it; the authority is the one URL changed.
# instance_discovery=False: the authority is not one of Microsoft's hosts, so MSAL must not ask
# login.microsoftonline.com about it.
app = msal.ConfidentialClientApplication(client_id, client_credential=client_secret,
                                         authority=base + "/" + tenant, instance_discovery=False)
result = app.acquire_token_for_client(scopes=[scope])
if "access_token" in result:
    status = publish(result["access_token"], "msal-1", "Published with MSAL")
    say("msal", token=True, publish=status)
    failed |= status != 201
else:
    say("msal", token=False, error=result.get("error"), description=result.get("error_description"))
    failed = True

# A wrong secret: MSAL's own error, not an exception.
wrong = msal.ConfidentialClientApplication(client_id, client_credential="not-the-secret",
                                           authority=base + "/" + tenant, instance_discovery=False)
try:
    result = wrong.acquire_token_for_client(scopes=[scope])
    say("msal-wrong-secret", error=result.get("error"), token="access_token" in result)
    failed |= result.get("error") != "invalid_client" or "access_token" in result
except Exception as error:  # noqa: BLE001 - the test is that there is none
    say("msal-wrong-secret", exception=repr(error))
    failed = True

# azure-identity, as the Graph SDK's samples use it: the authority is the service's host.
host = urllib.parse.urlsplit(base).netloc
credential = ClientSecretCredential(tenant, client_id, client_secret, authority=host, disable_instance_discovery=True)
try:
    token = credential.get_token(scope)
    status = publish(token.token, "azure-identity-1", "Published with azure-identity")
    say("azure-identity", token=True, publish=status, expires_in=token.expires_on - __import__("time").time())
    failed |= status != 201
except Exception as error:  # noqa: BLE001
    say("azure-identity", token=False, exception=repr(error)[:500])
    failed = True

sys.exit(1 if failed else 0)
