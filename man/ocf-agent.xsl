<?xml version="1.0"?>
<!-- ocf_clraid_clraid(7) from the agent's meta-data (the agent's own
     words: parameters, defaults, actions), as resource-agents makes its
     pages: "ocf/clraid meta-data | xsltproc man/ocf-agent.xsl -". -->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" encoding="UTF-8"/>
<xsl:param name="version" select="''"/>

<!-- one paragraph of roff text: whitespace folded, no line starting a
     request -->
<xsl:template name="para">
  <xsl:param name="text"/>
  <xsl:variable name="t" select="normalize-space($text)"/>
  <xsl:if test="starts-with($t, '.') or starts-with($t, &quot;'&quot;)">\&amp;</xsl:if>
  <xsl:value-of select="$t"/>
  <xsl:text>&#10;</xsl:text>
</xsl:template>

<xsl:template match="/resource-agent">
  <xsl:text>.TH OCF_CLRAID_CLRAID 7 "" "clraid </xsl:text>
  <xsl:value-of select="$version"/>
  <xsl:text>" "OCF resource agents"&#10;.SH NAME&#10;ocf_clraid_clraid \- </xsl:text>
  <xsl:value-of select="normalize-space(shortdesc)"/>
  <xsl:text>&#10;.SH SYNOPSIS&#10;.nf&#10;pcs resource create NAME ocf:clraid:clraid name=ARRAY devices="DEV..." lock=cpg \e&#10;    op monitor interval=10s clone interleave=true&#10;.fi&#10;.SH DESCRIPTION&#10;</xsl:text>
  <xsl:call-template name="para"><xsl:with-param name="text" select="longdesc"/></xsl:call-template>
  <xsl:text>.SH PARAMETERS&#10;</xsl:text>
  <xsl:for-each select="parameters/parameter">
    <xsl:text>.TP&#10;\fB</xsl:text>
    <xsl:value-of select="@name"/>
    <xsl:text>\fR (</xsl:text>
    <xsl:value-of select="content/@type"/>
    <xsl:if test="@required = '1'">, required</xsl:if>
    <xsl:if test="@unique = '1'">, unique</xsl:if>
    <xsl:if test="content/@default != ''">
      <xsl:text>, default "</xsl:text>
      <xsl:value-of select="content/@default"/>
      <xsl:text>"</xsl:text>
    </xsl:if>
    <xsl:text>)&#10;</xsl:text>
    <xsl:call-template name="para"><xsl:with-param name="text" select="longdesc"/></xsl:call-template>
  </xsl:for-each>
  <xsl:text>.SH ACTIONS&#10;.nf&#10;</xsl:text>
  <xsl:for-each select="actions/action">
    <xsl:value-of select="@name"/>
    <xsl:if test="@timeout"> timeout=<xsl:value-of select="@timeout"/></xsl:if>
    <xsl:if test="@interval"> interval=<xsl:value-of select="@interval"/></xsl:if>
    <xsl:if test="@depth"> depth=<xsl:value-of select="@depth"/></xsl:if>
    <xsl:if test="@role"> role=<xsl:value-of select="@role"/></xsl:if>
    <xsl:text>&#10;</xsl:text>
  </xsl:for-each>
  <xsl:text>.fi&#10;.SH EXIT STATUS&#10;The OCF codes: 0 success, 1 generic error (for example "not now": a stale member, an engine that does not answer), 2 bad arguments, 3 unimplemented action, 5 not installed (a member, nbdkit or the plugin missing on this node), 6 not configured (a configuration that cannot run, for example lock=local in a clone of more than one), 7 not running.  Every failure sets an exit reason, which crm_mon shows.&#10;.SH EXAMPLES&#10;.nf&#10;pcs resource create vmstore ocf:clraid:clraid name=vmstore \e&#10;    array_uuid=4bfc5095:fa0f4432:4e6cc2e4:aac0ded3 lock=cpg \e&#10;    op monitor interval=10s op monitor interval=60s OCF_CHECK_LEVEL=20 \e&#10;    clone interleave=true&#10;crm_resource \-\-resource vmstore \-\-validate&#10;.fi&#10;.SH SEE ALSO&#10;.BR clraid (8),&#10;.BR clraid-policyd (8),&#10;.BR pcs (8),&#10;.BR crm_mon (8)&#10;</xsl:text>
</xsl:template>
</xsl:stylesheet>
