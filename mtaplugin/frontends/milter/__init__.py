"""The pymilter front end for Postfix and Sendmail."""
