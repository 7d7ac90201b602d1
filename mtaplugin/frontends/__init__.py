"""The MTA front ends: milter (Postfix, Sendmail), LMTP and pipe (Exim), Exim's ACL
query server, Postfix's socketmap. Thin: every decision is the engine's."""
