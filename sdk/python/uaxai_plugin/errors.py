"""The kit's error types, in a module of their own so that the model
client (model.py) and the server (server.py) share them."""

import grpc


class Error(Exception):
    """An error an explainer reports to the host: its message goes back as
    is (the host prefixes the plugin ID and the call). ValueError does the
    same. Any other exception is a bug: the host gets its type and message
    with the code Internal, and the traceback goes to the plugin's log."""


class ServiceError(Error):
    """A call to the host's model service that failed: the message is
    "model service: <Method>: <details>", details being the service's own
    message (which names what it rejected and what it would accept).

    Attributes:
      method: the Model service's method (Describe, Probs, InputGrad,
        Layer, Windows).
      code: the grpc.StatusCode of the failure (CANCELLED when the
        Explain call ended while the model call was under way).
    """

    def __init__(self, method, code, details):
        super().__init__("model service: %s: %s" % (method, details))
        self.method = method
        self.code = code
        self.details = details


class CallTimeoutError(ServiceError):
    """A request to a served draw's model service that had no answer
    within the limit the host gave the call (its metadata's
    uaxai-model-call-ms, limits.model_call): "model service: <Method> of
    <what it carried>: no answer within <limit> (<key>)", code
    DEADLINE_EXCEEDED. The kit's server ends the Explain (or Load) with
    that code, and the host then stops the process that serves the draw,
    as sdk.CallTimeoutError does for a Go plugin."""

    def __init__(self, method, what, limit):
        Error.__init__(self, "model service: %s of %s: no answer within %s" % (method, what, limit))
        self.method = method
        self.code = grpc.StatusCode.DEADLINE_EXCEEDED
        self.details = str(self)
